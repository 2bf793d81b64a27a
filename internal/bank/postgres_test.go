package bank_test

import (
	"database/sql"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/pgcluster/pgtest"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/transport"
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

// TestCommitUnknownIsNotAnswered: a keyed debit whose COMMIT fails because
// its connection died is reported neither as executed nor as not
// executed: the bank sends no answer (StatusUnknown, which the transport
// never sends), leaves the key claimed, and a retry after the lease finds
// nothing committed and executes once.
func TestCommitUnknownIsNotAnswered(t *testing.T) {
	dsn := pgtest.NewDatabase(t, pgtest.Shared(t))
	killer, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close()
	var armed atomic.Bool
	armed.Store(true)
	terminated := make(chan int64, 1)
	clk := newClock()
	s, err := bank.OpenPostgres(dsn, bank.SQLOptions{Now: clk.Now, Lease: time.Second, Hooks: bank.Hooks{BeforeCommit: func() {
		if !armed.CompareAndSwap(true, false) {
			return
		}
		// The debit's own connection is the one idle in its
		// transaction, between its last statement and COMMIT.
		var n int64
		err := killer.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'idle in transaction'`).Scan(&n)
		if err != nil {
			t.Error(err)
		}
		terminated <- n
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := bank.New(s, nil)
	never := make(chan struct{})
	req := func(id uint64) *transport.Request {
		return &transport.Request{ID: id, Method: bank.MethodDebit, Key: "k", Payload: []byte("account=a amount=10"),
			BudgetMs: 2000, Expiry: time.Now().Add(2 * time.Second), Done: never}
	}
	st, p := b.Execute(req(1), nil)
	if n := <-terminated; n != 1 {
		t.Fatalf("terminated %d backends, want the debit's one", n)
	}
	if st != proto.StatusUnknown {
		t.Fatalf("a debit whose commit failed: %v %q, want %v: neither executed nor not executed", st, p, proto.StatusUnknown)
	}
	if got, _ := s.Get([]byte("a")); got.Debits != 0 {
		t.Fatalf("the terminated transaction committed: %+v", got)
	}
	clk.Advance(time.Second)
	st, p = b.Execute(req(2), nil)
	if st != proto.StatusOK || !strings.Contains(string(p), "exec=1 replayed=false") {
		t.Errorf("the retry after the lease: %v %q, want OK with the one execution", st, p)
	}
}
