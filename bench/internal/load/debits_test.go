package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/bench/internal/workload"
	"github.com/rpcbench/rpcbench/internal/pgcluster"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// fakeBank answers debits as rpcserver does, for tests of the debit
// workload without a server.
type fakeBank struct {
	mu     sync.Mutex // guards debits
	debits map[string]int64
}

func (b *fakeBank) Call(_ context.Context, req []byte) ([]byte, error) {
	account, _, _ := bytes.Cut(req, []byte{' '})
	name := strings.TrimPrefix(string(account), "account=")
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.debits[name] == workload.DefaultBalance {
		return nil, errors.New("insufficient funds")
	}
	b.debits[name]++
	d := b.debits[name]
	return fmt.Appendf(nil, "account=%s balance=%d budget=5000 exec=%d replayed=false", name, workload.DefaultBalance-d, d), nil
}

func (*fakeBank) Close() error { return nil }

// TestDebitWorkSpansPhases: debits are numbered over every phase a
// server sees, so no account is debited more than its balance allows
// however the calls are split into phases.
func TestDebitWorkSpansPhases(t *testing.T) {
	b := &fakeBank{debits: map[string]int64{}}
	var w debitWork
	const phases, n = 3, 30000
	for i := range phases {
		if res := runCalls(context.Background(), b, &w, 7, n, nil); res.bad != 0 {
			t.Fatalf("phase %d: got %d non-OK calls (first: %v), want 0", i, res.bad, res.first)
		}
	}
	var total int64
	for name, d := range b.debits {
		if d > workload.DebitsPerAccount {
			t.Errorf("%s: got %d debits, want at most %d", name, d, workload.DebitsPerAccount)
		}
		total += d
	}
	if total != phases*n {
		t.Errorf("debits: got %d, want %d", total, phases*n)
	}
	if got, want := len(b.debits), 2*workload.Accounts; got != want {
		t.Errorf("accounts: got %d, want %d", got, want)
	}
}

// fakeCounters is a Client whose server's exec.debit counter reads the
// values of execs in turn, or fails with err.
type fakeCounters struct {
	fakeClient
	execs []int64
	err   error
}

func (f *fakeCounters) Counters(context.Context) (serverapi.Counters, error) {
	if f.err != nil {
		return serverapi.Counters{}, f.err
	}
	c := serverapi.Counters{ExecDebit: f.execs[0]}
	f.execs = f.execs[1:]
	return c, nil
}

func TestExecutions(t *testing.T) {
	tests := []struct {
		name    string
		c       Client
		ok      int64
		want    int64
		wantErr string
	}{
		{"one per OK call", &fakeCounters{execs: []int64{10, 110}}, 100, 100, ""},
		{"one too many", &fakeCounters{execs: []int64{10, 111}}, 100, 101, "executed 101 debits for 100 that ended OK"},
		{"one too few", &fakeCounters{execs: []int64{10, 109}}, 100, 99, "executed 99 debits for 100 that ended OK"},
		{"counters unreadable", &fakeCounters{err: errors.New("boom")}, 100, 0, "before the measured phase: boom"},
		{"no counters", fakeClient{}, 100, 0, "cannot read the server's counters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e executions
			e.start(context.Background(), tt.c)
			got, gotErr := e.end(context.Background(), tt.c, tt.ok)
			if got != tt.want {
				t.Errorf("executed: got %d, want %d", got, tt.want)
			}
			if (gotErr == "") != (tt.wantErr == "") || !strings.Contains(gotErr, tt.wantErr) {
				t.Errorf("error: got %q, want one containing %q", gotErr, tt.wantErr)
			}
		})
	}
}

func TestStartPostgresWithoutBinaries(t *testing.T) {
	t.Setenv(pgcluster.EnvDSN, "")
	t.Setenv(pgcluster.EnvBin, t.TempDir()) // holds no initdb: not found
	systems, err := selectSystems([]string{KeyRPCBench, GroupDebits})
	if err != nil {
		t.Fatal(err)
	}
	for _, require := range []string{"", "1"} {
		t.Run("require="+require, func(t *testing.T) {
			t.Setenv(pgcluster.EnvRequire, require)
			st := &stores{dir: t.TempDir()}
			run, skipped, err := st.startPostgres(context.Background(), systems)
			if require == "1" {
				if !errors.Is(err, pgcluster.ErrNotFound) {
					t.Errorf("got %v, want an error wrapping pgcluster.ErrNotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(run) != len(systems)-1 {
				t.Errorf("systems: got %d, want %d", len(run), len(systems)-1)
			}
			for _, s := range run {
				if s.Key == KeyKeyedPostgres {
					t.Errorf("%s runs without PostgreSQL", s.Key)
				}
			}
			if len(skipped) != 1 || skipped[0].System != KeyKeyedPostgres || !strings.Contains(skipped[0].Reason, pgcluster.EnvRequire) {
				t.Errorf("skipped: got %+v, want %s with a reason naming %s", skipped, KeyKeyedPostgres, pgcluster.EnvRequire)
			}
		})
	}
}

func TestWriteMarkdownDebits(t *testing.T) {
	rep := &Report{
		Settings: Settings{Systems: []string{KeyKeyedMemory, KeyKeyedSQLite}, N: 100, Rounds: 2, Workers: 8},
		Rows: []Row{
			{System: KeyKeyedMemory, G: 8, Rounds: 2, TotalCalls: 200, Executed: 200, Debits: true, ClientCPUOK: true, ServerCPUOK: true},
			{System: KeyKeyedSQLite, G: 8, Rounds: 2, TotalCalls: 200, Executed: 201, Debits: true, ExecErrors: 1,
				FirstExecError: "rpcserver executed 101 debits for 100 that ended OK, want one each"},
		},
		Skipped: []Skipped{{System: KeyKeyedPostgres, Reason: "no binaries"}},
	}
	if !rep.Rows[1].Failed() {
		t.Errorf("a row with an ExecError: got Failed() false, want true")
	}
	var b bytes.Buffer
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"make unary `debit` calls (below), each server",
		"Rows of debits: every call is a `debit` of 1",
		"| rpcbench-keyed-memory | 8 |",
		"| ⚠ rpcbench-keyed-sqlite | 8 |",
		"- ⚠ rpcbench-keyed-sqlite G=8: in 1 of 2 rounds: rpcserver executed 101 debits for 100 that ended OK",
		"- exactly once: over the measured phases of the rows of debits without ⚠, rpcserver executed 200 debits for 200 OK calls.",
		"- rpcbench-keyed-postgres did not run: no binaries",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "`get`") {
		t.Errorf("output describes gets, which did not run:\n%s", out)
	}
}

// TestRunDebits runs every row of debits for real, servers in their own
// processes, the PostgreSQL row on a cluster of its own (left out when
// PostgreSQL is not installed, unless RPCBENCH_REQUIRE_PG=1). It checks
// that every call ended OK, that the server executed each debit exactly
// once, and that the run left nothing in its temporary directory. It
// asserts nothing about speed.
func TestRunDebits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and spawns the servers and PostgreSQL")
	}
	// Where the run, its SQLite file and its cluster live. Not
	// t.TempDir, which only its owner may enter: as root, pgcluster runs
	// PostgreSQL as nobody, who must reach its data directory.
	tmp, err := os.MkdirTemp("", "rpcload-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := DefaultOptions()
	o.Systems = []string{GroupDebits}
	o.N, o.Warmup, o.Rounds, o.G = 400, 40, 2, []int{8, 64}
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	want := len(o.G) * 4
	if len(rep.Skipped) > 0 {
		if pgcluster.Required() || len(rep.Skipped) != 1 || rep.Skipped[0].System != KeyKeyedPostgres {
			t.Fatalf("skipped: got %+v, want none, or %s when PostgreSQL is not installed and not required", rep.Skipped, KeyKeyedPostgres)
		}
		t.Logf("%s left out: %s", KeyKeyedPostgres, rep.Skipped[0].Reason)
		want = len(o.G) * 3
	}
	if got := len(rep.Rows); got != want {
		t.Fatalf("rows: got %d, want %d", got, want)
	}
	for _, r := range rep.Rows {
		calls := int64(o.Rounds * o.N)
		if r.Key == KeyKeyedSQLite || r.Key == KeyKeyedPostgres {
			calls /= sqlCallsDiv
		}
		if r.TotalCalls != calls || r.NonOK != 0 {
			t.Errorf("%s G=%d: got %d non-OK of %d calls (first: %s), want 0 of %d", r.System, r.G, r.NonOK, r.TotalCalls, r.FirstError, calls)
		}
		if r.Executed != r.TotalCalls || r.ExecErrors != 0 {
			t.Errorf("%s G=%d: server executed %d debits for %d calls (%s), want one each", r.System, r.G, r.Executed, r.TotalCalls, r.FirstExecError)
		}
		if r.CallsPerSec <= 0 || r.P50us <= 0 || r.P99us < r.P50us {
			t.Errorf("%s G=%d: got calls/s %v p50 %vµs p99 %vµs, want positive and ordered", r.System, r.G, r.CallsPerSec, r.P50us, r.P99us)
		}
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("the run left %s in its temporary directory", e.Name())
	}
}
