// Package pgtest gives tests a PostgreSQL cluster from pgcluster, skipping
// them when none can be had.
//
// A test that cannot have PostgreSQL, because its binaries are not
// installed and RPCBENCH_PG_DSN is unset, is skipped with a message saying
// how to install it, unless RPCBENCH_REQUIRE_PG=1, which makes it fail.
//
// A package whose tests share one cluster runs them through Main and gives
// each test a database of its own:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Main(m)) }
//
//	func TestStore(t *testing.T) {
//		dsn := pgtest.NewDatabase(t, pgtest.Shared(t))
//		...
//	}
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/leftover"
	"github.com/rpcbench/rpcbench/internal/pgcluster"
)

// Start starts a cluster of t's own, stopped when t ends. Each costs about
// one initdb; tests that can share a cluster should use Shared.
func Start(t testing.TB) *pgcluster.Cluster {
	t.Helper()
	c, err := pgcluster.Start(t.Context())
	if err != nil {
		fail(t, err)
	}
	reportSwept(c)
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// shared is the cluster Shared hands out, started on first use and stopped
// by the Runner Main returns.
var shared struct {
	once sync.Once
	c    *pgcluster.Cluster
	err  error
}

// mainWrapped records that TestMain runs the tests through Main, which is
// what stops the shared cluster.
var mainWrapped atomic.Bool

// Shared returns the test binary's cluster, starting it on first use. The
// package's TestMain must run the tests through Main, which stops it;
// without that, Shared fails the test rather than leave a server running.
// Tests sharing it should each use a database of their own: see
// NewDatabase.
func Shared(t testing.TB) *pgcluster.Cluster {
	t.Helper()
	if !mainWrapped.Load() {
		t.Fatal("pgtest: Shared needs TestMain to run the tests through pgtest.Main, which stops the cluster; or use pgtest.Start")
	}
	shared.once.Do(func() {
		// Not t's context: the cluster outlives t.
		shared.c, shared.err = pgcluster.Start(context.Background())
		if shared.err == nil {
			reportSwept(shared.c)
		}
	})
	if shared.err != nil {
		fail(t, shared.err)
	}
	return shared.c
}

// Runner is what TestMain runs: *testing.M, or what Main returns. It is
// goleak.TestingM too.
type Runner interface {
	Run() int
}

// Main returns m whose Run also stops the shared cluster, if Shared started
// one, after the tests: goleak.VerifyTestMain(pgtest.Main(m)), or
// os.Exit(pgtest.Main(m).Run()). A failure to stop the cluster fails the
// run.
func Main(m Runner) Runner {
	mainWrapped.Store(true)
	return runner{m}
}

type runner struct{ m Runner }

func (r runner) Run() int {
	// What killed test runs left goes before this one makes its own.
	removed, err := leftover.Sweep("")
	leftover.Report(os.Stderr, "pgtest", removed, err)
	code := r.m.Run()
	if shared.c != nil {
		if err := shared.c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// reportSwept says on stderr which databases of killed runs Start
// dropped on an external server.
func reportSwept(c *pgcluster.Cluster) {
	dropped, err := c.Swept()
	leftover.Report(os.Stderr, "pgtest", dropped, err)
}

// dropTimeout bounds the DROP DATABASE that ends a test's database.
const dropTimeout = 30 * time.Second

// NewDatabase creates a database on c named after t and returns its DSN;
// the database is dropped when t ends.
func NewDatabase(t testing.TB, c *pgcluster.Cluster) string {
	t.Helper()
	dsn, err := c.NewDatabase(t.Context(), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// t's context is done by now.
		ctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
		defer cancel()
		if err := c.DropDatabase(ctx, dsn); err != nil && !errors.Is(err, pgcluster.ErrStopped) {
			t.Error(err)
		}
	})
	return dsn
}

// fail skips t when PostgreSQL is missing and not required, and fails it
// otherwise.
func fail(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, pgcluster.ErrNotFound) && !pgcluster.Required() {
		t.Skip(err)
	}
	t.Fatal(err)
}
