package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/testexit"
)

// serverBin is the rpcserver the runs start, built once by TestMain.
var serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rpcbench-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "rpcserver")
	build := exec.Command("go", "build", "-o", serverBin, "github.com/rpcbench/rpcbench/cmd/rpcserver")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "build rpcserver: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	testexit.Exit(code)
}

// short returns options for a short run into a test directory.
func short(t *testing.T, seed int64) Options {
	o := DefaultOptions()
	o.Seed, o.Duration, o.Out, o.ServerBin = seed, 3*time.Second, t.TempDir(), serverBin
	return o
}

func run(t *testing.T, o Options) Result {
	t.Helper()
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s\n%s", strings.Join(res.Lines(), "\n"), res.Replay())
	return res
}

func verdicts(r Result) map[string]report.Verdict {
	m := map[string]report.Verdict{}
	for _, c := range r.Checks {
		m[c.Name] = c.Verdict
	}
	return m
}

// TestScheduleIsAFunctionOfTheSeed: the same seed and options give the
// same schedule; another seed another one.
func TestScheduleIsAFunctionOfTheSeed(t *testing.T) {
	o := DefaultOptions()
	o.Duration = 30 * time.Second
	a, b := Schedule(o), Schedule(o)
	if len(a) == 0 || Digest(a) != Digest(b) || !slices.Equal(a, b) {
		t.Fatalf("two schedules of seed %d differ: %s, %s", o.Seed, Digest(a), Digest(b))
	}
	o.Seed++
	if c := Schedule(o); Digest(c) == Digest(a) {
		t.Errorf("seeds %d and %d give the same schedule", o.Seed-1, o.Seed)
	}
	o.Faults = nil
	if evs := Schedule(o); len(evs) != 0 {
		t.Errorf("no faults enabled, yet %d events", len(evs))
	}
}

// TestChaosPasses: the project's client against a server with every
// fault it survives passes all three checks, and writes its history.
func TestChaosPasses(t *testing.T) {
	t.Parallel() // a run of its own: its own server, ports and directory
	o := short(t, 1)
	res := run(t, o)
	if res.Verdict != report.Pass || res.Faults == 0 || res.OK == 0 {
		t.Errorf("verdict %s after %d faults, %d ok operations: want PASS after some of each", res.Verdict, res.Faults, res.OK)
	}
	b, err := os.ReadFile(filepath.Join(o.Out, HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	ops, err := ReadHistory(strings.NewReader(string(b)))
	if err != nil || len(ops) != len(res.Ops) {
		t.Errorf("history.jsonl holds %d operations (%v), the run %d", len(ops), err, len(res.Ops))
	}
}

// TestNaiveClientFailsLinearizability: a client that re-sends keyless
// debits after an unknown outcome debits some twice, and the
// linearizability checker says so. Whether a fault of a 3 s schedule
// lands on a keyless debit is chance (CI once drew a run whose faults hit
// keyed debits and gets only), so up to three seeds are run and the
// first whose history is not linearizable is the one checked; none at
// all fails the test.
func TestNaiveClientFailsLinearizability(t *testing.T) {
	t.Parallel() // a run of its own: its own server, ports and directory
	var o Options
	var res Result
	for seed := int64(1); seed <= 3; seed++ {
		o = short(t, seed)
		o.Client = ClientNaive
		o.Faults = []string{NemNoReply, NemClose, NemPartial, NemLate}
		res = run(t, o)
		if hasVerdict(verdicts(res), CheckLinear, report.Fail) {
			break
		}
	}
	if got := verdicts(res); !hasVerdict(got, CheckLinear, report.Fail) {
		t.Fatalf("checks %v after three seeds: the naive client must fail %s", got, CheckLinear)
	}
	if _, err := os.Stat(filepath.Join(o.Out, "linear-"+res.Linear.Failed[0]+".html")); err != nil {
		t.Errorf("no visualization: %v", err)
	}
	if len(res.Linear.Window) == 0 {
		t.Errorf("no window of the violation")
	}
}

// TestMemoryRestartsFailExactlyOnce: a restarted in-memory server forgets
// its keys, so retries of debits it executed before dying execute again,
// and the exactly-once checker says so; the SQLite store passes the same
// schedule.
func TestMemoryRestartsFailExactlyOnce(t *testing.T) {
	t.Parallel() // a run of its own: its own server, ports and directory
	o := short(t, 1)
	o.Faults = []string{NemKill}
	if got := verdicts(run(t, o)); !hasVerdict(got, CheckExactlyOnce, report.Fail) {
		t.Errorf("memory store with kills: checks %v, want %s to fail", got, CheckExactlyOnce)
	}
	o.Store, o.Out = StoreSQLite, t.TempDir()
	if res := run(t, o); res.Verdict != report.Pass {
		t.Errorf("sqlite store with kills: %s, want PASS", res.Verdict)
	}
}

// TestDrainsPass: two servers on SQLite drained and restarted, one at a
// time and all in turn, under the normal client: the history passes every
// check with no nemesis error, and the servers' logs show the drains
// really ran to their end. The same schedule against the in-memory
// store, whose restarted server forgets every balance, is not
// linearizable: the checks see the restarts. (Its exactly-once check
// may pass: a drain answers what it took, so no executed debit is
// retried onto the server that forgot it.)
func TestDrainsPass(t *testing.T) {
	t.Parallel() // a run of its own: its own server, ports and directory
	o := short(t, 5)
	o.Store, o.Servers, o.Faults = StoreSQLite, 2, []string{NemDrain, NemRolling}
	res := run(t, o)
	if res.Verdict != report.Pass || len(res.NemesisErrors) > 0 {
		t.Errorf("verdict %s, nemesis errors %v: want PASS and none", res.Verdict, res.NemesisErrors)
	}
	drains := 0
	for i := range o.Servers {
		b, err := os.ReadFile(filepath.Join(o.Out, fmt.Sprintf("server-%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		drains += strings.Count(string(b), `"msg":"`+serverapi.EventDrainDone+`"`)
	}
	if drains == 0 {
		t.Errorf("no server logged %s: the schedule %v drained nothing", serverapi.EventDrainDone, res.Schedule)
	}
	o.Store, o.Servers, o.Out = StoreMemory, 1, t.TempDir()
	if got := verdicts(run(t, o)); !hasVerdict(got, CheckLinear, report.Fail) {
		t.Errorf("memory store with drains: checks %v, want %s to fail", got, CheckLinear)
	}
}

// crossed is a deliberately broken client: all of a run's clients share
// one answer slot, and each call returns the answer the slot held before
// its own, as a client matching answers to calls in arrival order would
// when one goes missing.
type crossed struct {
	mu   *sync.Mutex
	last *client.Result
	c    caller
}

func (x crossed) Do(ctx context.Context, call client.Call) client.Result {
	r := x.c.Do(ctx, call)
	x.mu.Lock()
	defer x.mu.Unlock()
	prev := *x.last
	*x.last = r
	if prev.Payload == nil {
		return r
	}
	return prev
}

// TestCrossedAnswersFailRightCaller: answers handed to the wrong call are
// caught by the right-caller checker.
func TestCrossedAnswersFailRightCaller(t *testing.T) {
	t.Parallel() // a run of its own: its own server, ports and directory
	o := short(t, 1)
	o.Faults = nil
	var mu sync.Mutex
	var last client.Result
	o.wrap = func(c caller) caller { return crossed{mu: &mu, last: &last, c: c} }
	if got := verdicts(run(t, o)); !hasVerdict(got, CheckRightCaller, report.Fail) {
		t.Errorf("crossed answers: checks %v, want %s to fail", got, CheckRightCaller)
	}
}

// cancelOn is a progress writer that calls cancel at the first line
// matching pattern. Progress is written by the run and its nemesis.
type cancelOn struct {
	pattern *regexp.Regexp
	cancel  func()
	mu      sync.Mutex // guards lines
	lines   []string
}

func (w *cancelOn) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, string(b))
	if w.pattern.Match(b) {
		w.cancel()
	}
	return len(b), nil
}

// nemesisLine is the progress line of a nemesis event carried out, as
// opposed to the schedule's lines printed before the run starts.
var nemesisLine = regexp.MustCompile(`^chaos: +\d+\.\d{3}s `)

// TestInterruptedIsChecked: a run whose context ends while the workload
// runs stops it and the nemesis, checks the history recorded so far and
// returns that result with the context's error.
func TestInterruptedIsChecked(t *testing.T) {
	o := short(t, 1)
	o.Duration = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Progress = &cancelOn{pattern: nemesisLine, cancel: cancel}
	start := time.Now()
	res, err := Run(ctx, o)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got error %v, want %v", err, context.Canceled)
	}
	// The run stops at once; its calls in flight end within their own
	// deadline (2s). The bound is far below the run's minute.
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("interrupted run took %v, want it to stop well before its %v", took, o.Duration)
	}
	lines := res.Lines()
	t.Logf("%s", strings.Join(lines, "\n"))
	if len(res.Ops) == 0 || len(res.Checks) != 3 {
		t.Fatalf("got %d operations and %d checks, want some operations, all checked by 3 checkers", len(res.Ops), len(res.Checks))
	}
	if last := lines[len(lines)-1]; !regexp.MustCompile(` verdict=PASS interrupted_after=\d+(\.\d+)?m?s$`).MatchString(last) {
		t.Errorf("got CHAOS line %q, want verdict=PASS interrupted_after=T", last)
	}
	b, err := os.ReadFile(filepath.Join(o.Out, HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if ops, err := ReadHistory(strings.NewReader(string(b))); err != nil || len(ops) != len(res.Ops) {
		t.Errorf("history.jsonl holds %d operations (%v), the run %d", len(ops), err, len(res.Ops))
	}
}

// TestReplay: the replay line passes every option of the run, quoted
// where a shell would split or expand it.
func TestReplay(t *testing.T) {
	o := DefaultOptions()
	o.Out, o.CheckTimeout, o.Faults = "/tmp/it's here", 90*time.Second, nil
	r := Result{Options: o}
	want := `'/opt/rpc bench/rpcbench' chaos --server /x/rpcserver --seed 1 --duration 10s --clients 8 --accounts 4 --store memory --servers 1 --faults none --client normal --out '/tmp/it'\''s here' --check-timeout 1m30s`
	if got := r.ReplayAs("/opt/rpc bench/rpcbench", "--server", "/x/rpcserver"); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, tt := range []struct{ in, want string }{
		{"chaos-out", "chaos-out"},
		{"", "''"},
		{"a b", "'a b'"},
		{"$HOME", "'$HOME'"},
		{"it's", `'it'\''s'`},
		{"noreply,close", "noreply,close"},
	} {
		if got := shellQuote(tt.in); got != tt.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// hasVerdict reports whether the check named name is there with verdict
// v: report.Fail is Verdict's zero value, which a missing check would
// also read as.
func hasVerdict(got map[string]report.Verdict, name string, v report.Verdict) bool {
	g, ok := got[name]
	return ok && g == v
}
