package scenario

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/leftover"
)

// NeedsPostgres is the Needs of a scenario that runs against PostgreSQL:
// its runner must set Env.Postgres.
const NeedsPostgres = "postgres"

// ErrNoPostgres is what a PostgreSQL scenario fails with when its runner
// gave it no database server.
var ErrNoPostgres = errors.New("no PostgreSQL server: install Debian's postgresql package (apt-get install postgresql) or set RPCBENCH_PG_DSN")

// NewStore returns the -store spec of a fresh, empty store of kind: a
// SQLite file in a directory removed when the scenario ends, or a new
// PostgreSQL database, dropped when it ends.
func (t *T) NewStore(kind string) string {
	t.Field("store", kind)
	switch kind {
	case bank.KindMemory:
		return bank.KindMemory
	case bank.KindSQLite:
		dir, err := leftover.MkdirTemp("", t.Name)
		if err != nil {
			t.Fatalf("store: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		return "sqlite:" + filepath.Join(dir, "bank.db")
	case bank.KindPostgres:
		if t.Env.Postgres == nil {
			t.Fatalf("%v", ErrNoPostgres)
		}
		dsn, err := t.Env.Postgres.NewDatabase(t.Ctx, t.Name)
		if err != nil {
			t.Fatalf("store: %v", err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := t.Env.Postgres.DropDatabase(ctx, dsn); err != nil {
				t.Check(false, "drop database: %v", err)
			}
		})
		return dsn
	}
	t.Fatalf("unknown store kind %q", kind)
	return ""
}
