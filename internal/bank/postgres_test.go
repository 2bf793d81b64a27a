package bank_test

import (
	"testing"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/pgcluster/pgtest"
)

// The PostgreSQL store runs every test the SQLite store runs, each in a
// database of its own on the test binary's cluster.
func init() {
	sqlKinds = append(sqlKinds, storeKind{bank.KindPostgres, func(t *testing.T, opts bank.SQLOptions) bank.Store {
		t.Helper()
		dsn := pgtest.NewDatabase(t, pgtest.Shared(t))
		s, err := bank.OpenPostgres(dsn, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}})
}
