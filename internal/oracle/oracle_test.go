package oracle

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/rpcbench/rpcbench/internal/pgcluster/pgtest"
	"github.com/rpcbench/rpcbench/internal/testexit"
)

func TestMain(m *testing.M) { testexit.Exit(m.Run()) }

// The SQL oracle counts what a query counts, on SQLite and on
// PostgreSQL, and refuses a database or a query it cannot read before
// anything runs.
func TestSQL(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "shop.db")
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		checkSQL(t, "sqlite:"+path, db)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.NewDatabase(t, pgtest.Start(t)) // skips without PostgreSQL, unless RPCBENCH_REQUIRE_PG=1
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		db := stdlib.OpenDB(*cfg)
		defer db.Close()
		checkSQL(t, dsn, db)
	})
	if _, err := OpenSQL(context.Background(), "mysql://x", "SELECT 1", 1); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "give sqlite:PATH") {
		t.Errorf("an unknown database: %v, want ErrUsage saying what to give", err)
	}
}

// checkSQL counts orders written through db with the oracle on dsn.
func checkSQL(t *testing.T, dsn string, db *sql.DB) {
	t.Helper()
	if _, err := db.Exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)"); err != nil {
		t.Fatal(err)
	}
	o, err := OpenSQL(context.Background(), dsn, "SELECT count(*) FROM orders", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for i := range 2 {
		if _, err := db.Exec(fmt.Sprintf("INSERT INTO orders (id, item) VALUES (%d, 'book')", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := o.Read(context.Background()); err != nil || n != 2 {
		t.Errorf("Read: %d, %v; want 2", n, err)
	}
	if n, err := o.Executions(2); err != nil || n != 2 {
		t.Errorf("Executions(2): %d, %v", n, err)
	}
	if _, err := o.Executions(-1); err == nil {
		t.Error("a count that went down is no number of executions, yet Executions took it")
	}
	if _, err := OpenSQL(context.Background(), dsn, "SELECT item FROM nowhere", 1); !errors.Is(err, ErrUsage) {
		t.Errorf("a query that cannot run: %v, want ErrUsage", err)
	}
}

// The log oracle counts the lines of a service's output that match,
// one per execution, however the output is cut into writes.
func TestLog(t *testing.T) {
	l, err := NewLog("^placed order ")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"placed order 1\nstarting\npla", "ced order 2\n", "placed order 3"} {
		if _, err := l.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if n, _ := l.Read(context.Background()); n != 3 {
		t.Errorf("counted %d lines, want 3", n)
	}
	if _, err := NewLog("("); !errors.Is(err, ErrUsage) {
		t.Errorf("a pattern that does not compile: %v, want ErrUsage", err)
	}
}
