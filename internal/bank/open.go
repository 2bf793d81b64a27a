package bank

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// Store kinds, as Open reports them.
const (
	KindMemory   = "memory"
	KindSQLite   = "sqlite"
	KindPostgres = "postgres"
)

// StoreSyntax says what Open accepts, for usage messages.
const StoreSyntax = "memory | sqlite:PATH | postgres://USER@HOST/DB?..."

// ErrStoreSpec is wrapped by Open's errors about the spec itself.
var ErrStoreSpec = errors.New("bank: bad store")

// Opened is a store Open made, with what closes it.
type Opened struct {
	Store Store
	Kind  string
	io.Closer
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// Open opens the store spec names: "memory" (or ""), "sqlite:PATH" for a
// SQLite database file, created if absent, or a postgres:// or
// postgresql:// URL (or "postgres:" followed by a key=value DSN). A
// SQL store creates its tables if they are absent. opts apply to SQL
// stores; of them the memory store takes only Hooks.
func Open(spec string, opts SQLOptions) (Opened, error) {
	switch {
	case spec == "" || spec == KindMemory:
		m := NewMemory()
		m.Hooks = opts.Hooks
		return Opened{Store: m, Kind: KindMemory, Closer: nopCloser{}}, nil
	case strings.HasPrefix(spec, "sqlite:"):
		s, err := OpenSQLite(strings.TrimPrefix(spec, "sqlite:"), opts)
		if err != nil {
			return Opened{}, err
		}
		return Opened{Store: s, Kind: KindSQLite, Closer: s}, nil
	case strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://"):
		s, err := OpenPostgres(spec, opts)
		if err != nil {
			return Opened{}, err
		}
		return Opened{Store: s, Kind: KindPostgres, Closer: s}, nil
	case strings.HasPrefix(spec, "postgres:"):
		s, err := OpenPostgres(strings.TrimPrefix(spec, "postgres:"), opts)
		if err != nil {
			return Opened{}, err
		}
		return Opened{Store: s, Kind: KindPostgres, Closer: s}, nil
	}
	return Opened{}, fmt.Errorf("%w %q: want %s", ErrStoreSpec, spec, StoreSyntax)
}

// OpenSQLite opens (creating if absent) the SQLite database file at path.
// It runs in WAL mode with synchronous=NORMAL: a commit survives the
// process's crash, the case the durability scenarios test; the last
// commits before a power loss may not. All statements go through one
// connection, so writers queue in the process instead of meeting
// SQLITE_BUSY; a second process on the file waits up to 10s for its lock.
func OpenSQLite(path string, opts SQLOptions) (*SQLStore, error) {
	// The path becomes a file: URI, in which these would be read as
	// syntax, not as part of the name.
	if path == "" || strings.ContainsAny(path, "?#%") {
		return nil, fmt.Errorf("%w: sqlite path %q must be non-empty, without ?, # or %%", ErrStoreSpec, path)
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("bank: sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	// Opened here, not by the first statement, so that a file that cannot
	// be opened is reported with its path, and only once.
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("bank: sqlite %s: %w%s", path, err, sqliteHint(path))
	}
	s, err := newSQLStore(db, dialect{name: KindSQLite, rebind: keepRebind, schema: schemaStatements("BLOB")}, opts)
	if err != nil {
		db.Close()
		// newSQLStore's errors already say "bank: sqlite".
		return nil, fmt.Errorf("%w (database %s)", err, path)
	}
	return s, nil
}

// sqliteHint says how to fix a path SQLite could not open, in the two
// cases its "unable to open database file" does not explain; "" in any
// other.
func sqliteHint(path string) string {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return "; " + path + " is a directory, name a file in it"
	}
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return "; the directory " + dir + " does not exist, create it first"
	}
	return ""
}

// OpenPostgres connects to the PostgreSQL database dsn names, a URL or a
// key=value DSN as pgx reads them. Several servers may share it; each
// opens at most 16 connections. Unless the DSN sets it, a session idle in
// a transaction for 10s is ended by the server, so that a server that
// vanished mid-transaction does not hold its locks until TCP notices.
func OpenPostgres(dsn string, opts SQLOptions) (*SQLStore, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("bank: postgres: %w", err)
	}
	if _, set := cfg.RuntimeParams["idle_in_transaction_session_timeout"]; !set {
		cfg.RuntimeParams["idle_in_transaction_session_timeout"] = "10s"
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	schema := append([]string{`SELECT pg_advisory_xact_lock(726863)`}, schemaStatements("BYTEA")...)
	s, err := newSQLStore(db, dialect{name: KindPostgres, rebind: dollarRebind, schema: schema}, opts)
	if err != nil {
		db.Close()
		return nil, err // newSQLStore's errors already say "bank: postgres"
	}
	return s, nil
}
