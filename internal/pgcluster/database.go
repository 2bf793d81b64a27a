package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/rpcbench/rpcbench/internal/leftover"
)

// maxIdentifier is the longest name PostgreSQL keeps whole (NAMEDATALEN-1).
const maxIdentifier = 63

// seq numbers the databases this process creates, on every Cluster: two
// Clusters of one process on one external server never choose one name.
var seq atomic.Uint64

// NewDatabase creates an empty database and returns a DSN for it, which
// pgx.Connect and database/sql's "pgx" driver accept. Its name is unique on
// the server: rpcbench_<owner>_ naming this process (package leftover),
// a counter, then prefix, lower-cased, with every character outside
// [a-z0-9_] made '_', cut to fit. The DSN has the form of the server's: a
// postgres:// URL for a server Start started, RPCBENCH_PG_DSN with the
// database replaced for an external one.
//
// The database disappears with a server Start started; on an external
// server it stays until DropDatabase, or, if this process dies first,
// until a later Start on that server finds its owner gone.
func (c *Cluster) NewDatabase(ctx context.Context, prefix string) (string, error) {
	if c.isStopped() {
		return "", ErrStopped
	}
	var name string
	if me, err := leftover.Self(); err == nil {
		name = ownedName(me.Name("_"), prefix, seq.Add(1))
	} else {
		name = databaseName(prefix, seq.Add(1), rand.Uint32())
	}
	if err := c.exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("pgcluster: create database %s: %w", name, err)
	}
	c.mu.Lock()
	c.dbs[name] = true
	c.mu.Unlock()
	return withDatabase(c.admin, name), nil
}

// DropDatabase drops a database NewDatabase created, given the DSN it
// returned, first ending any session still connected to it. It refuses
// every other database, so that a mistaken DSN cannot drop data on an
// external server.
func (c *Cluster) DropDatabase(ctx context.Context, dsn string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("pgcluster: drop database: %w", err)
	}
	name := cfg.Database
	c.mu.Lock()
	stopped, ours := c.stopped, c.dbs[name]
	c.mu.Unlock()
	switch {
	case stopped:
		return ErrStopped
	case !ours:
		return fmt.Errorf("pgcluster: drop database %q: not created by this cluster", name)
	}
	if err := c.exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("pgcluster: drop database %s: %w", name, err)
	}
	c.mu.Lock()
	delete(c.dbs, name)
	c.mu.Unlock()
	return nil
}

func (c *Cluster) isStopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

// exec runs one statement on a connection of its own: CREATE and DROP
// DATABASE cannot run in a transaction, and a pgx.Conn is not safe for
// concurrent use.
func (c *Cluster) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, c.admin)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, sql)
	if cerr := conn.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// sweep drops the databases on the server whose owner is gone (see
// package leftover), and returns their names. It is for an external
// server, which outlives the runs that use it.
func (c *Cluster) sweep(ctx context.Context) ([]string, error) {
	conn, err := pgx.Connect(ctx, c.admin)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT datname FROM pg_database WHERE datname LIKE $1", leftover.Prefix+`\_%`)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: listing databases: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgcluster: listing databases: %w", err)
	}
	var dropped []string
	var errs []error
	for _, name := range names {
		if o, ok := leftover.Parse(name, "_"); !ok || !o.Gone() {
			continue
		}
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			errs = append(errs, fmt.Errorf("pgcluster: drop database %s: %w", name, err))
			continue
		}
		dropped = append(dropped, name)
	}
	return dropped, errors.Join(errs...)
}

// ownedName returns owner, a name's start from leftover.Owner.Name, then
// seq and prefix made a name that needs no quoting, cut to fit in
// maxIdentifier bytes.
func ownedName(owner, prefix string, seq uint64) string {
	name := fmt.Sprintf("%s%d_%s", owner, seq, identifier(prefix))
	return name[:min(len(name), maxIdentifier)]
}

// databaseName returns a name that needs no quoting and fits in
// maxIdentifier bytes, however long prefix is: the name of a database
// of a process that cannot name itself as its owner.
func databaseName(prefix string, seq uint64, random uint32) string {
	p := identifier(prefix)
	switch {
	case p == "":
		p = "db"
	case p[0] >= '0' && p[0] <= '9':
		p = "db_" + p
	}
	suffix := fmt.Sprintf("_%d_%08x", seq, random)
	if len(p)+len(suffix) > maxIdentifier {
		p = p[:maxIdentifier-len(suffix)]
	}
	return p + suffix
}

// identifier returns s lower-cased, with every character outside
// [a-z0-9_] made '_'.
func identifier(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// withDatabase returns dsn naming database db instead of its own,
// otherwise byte for byte the same. db must need no quoting or escaping,
// as databaseName's names do.
func withDatabase(dsn, db string) string {
	scheme := ""
	for _, p := range []string{"postgres://", "postgresql://"} {
		if strings.HasPrefix(dsn, p) {
			scheme = p
		}
	}
	if scheme == "" {
		// A keyword/value DSN: libpq and pgx both let a later keyword
		// override an earlier one.
		return strings.TrimSpace(dsn) + " dbname=" + db
	}
	// [userinfo@]hosts[/dbname][?params], split as libpq splits it: the
	// userinfo ends at an '@' seen before any '/'.
	rest := strings.TrimPrefix(dsn, scheme)
	userinfo := ""
	if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
		userinfo, rest = rest[:i+1], rest[i+1:]
	}
	hosts, params := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		hosts, rest = rest[:i], rest[i:]
		_, params, _ = strings.Cut(rest, "?")
	}
	var kept []string
	for pair := range strings.SplitSeq(params, "&") {
		if pair != "" && !namesDatabase(pair) {
			kept = append(kept, pair)
		}
	}
	out := scheme + userinfo + hosts + "/" + db
	if len(kept) > 0 {
		out += "?" + strings.Join(kept, "&")
	}
	return out
}

// namesDatabase reports whether the URL query parameter pair sets the
// database, which would override the URL's path.
func namesDatabase(pair string) bool {
	key, _, _ := strings.Cut(pair, "=")
	key, err := url.PathUnescape(key)
	return err == nil && (key == "dbname" || key == "database")
}
