package evidence

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/scenario/scenariotest"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// TestInterruptedIsNeitherPassNorFail: a scenario whose context ends is
// INTERRUPTED, whatever it checked before.
func TestInterruptedIsNeitherPassNorFail(t *testing.T) {
	c, ok := scenario.Registry(Cases()).Lookup("decoder_split_model") // in-process: no server to start
	if !ok {
		t.Fatal("decoder_split_model is not registered")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	line := c.Run(ctx, scenariotest.Env)
	if line.Verdict != report.Interrupted {
		t.Errorf("verdict %v, want %v: %s", line.Verdict, report.Interrupted, report.Format(line))
	}
}

// TestExecEventsCountExecutions: the server log alone says how often a
// debit executed: its EXEC events with status OK, on connections that did
// not declare themselves control connections, match the count the
// scenario took from the server's counters.
func TestExecEventsCountExecutions(t *testing.T) {
	for _, name := range []string{"negative_control_naive_retry", "retry_with_idempotency_key"} {
		t.Run(name, func(t *testing.T) {
			c, ok := scenario.Registry(Cases()).Lookup(name)
			if !ok {
				t.Fatalf("%s is not registered", name)
			}
			dir := t.TempDir()
			line := c.Run(context.Background(), scenario.Env{ServerBin: scenariotest.Env.ServerBin, LogDir: dir})
			if !line.Passed() {
				t.Fatalf("%s", report.Format(line))
			}
			var want string
			for _, f := range line.Fields {
				if f.Key == "serverDebitExec" {
					want = f.Value
				}
			}
			b, err := os.Open(filepath.Join(dir, "server-"+name+".log"))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			evs, err := serverapi.ReadEvents(b)
			if err != nil {
				t.Fatal(err)
			}
			control := map[int64]bool{}
			execs := 0
			for _, e := range evs {
				conn, _ := e.Int(serverapi.KeyConn)
				switch {
				case e.Name == serverapi.EventConnRole && e.Text(serverapi.KeyRole) == serverapi.RoleControl:
					control[conn] = true
				case e.Name == serverapi.EventExec && !control[conn] &&
					e.Text(serverapi.KeyMethod) == bank.MethodDebit && e.Text(serverapi.KeyStatus) == "OK":
					execs++
				}
			}
			if got := strconv.Itoa(execs); got != want || want == "" {
				t.Errorf("EXEC events of OK debits on the scenario's own connections: %s, serverDebitExec=%s", got, want)
			}
		})
	}
}

// TestNoServerNote: a scenario that starts no server says so in the log
// directory, and one that does leaves no such note.
func TestNoServerNote(t *testing.T) {
	for name, wantNote := range map[string]bool{"decoder_split_model": true, "late_response_dropped_by_id": false} {
		c, _ := scenario.Registry(Cases()).Lookup(name)
		dir := t.TempDir()
		if line := c.Run(context.Background(), scenario.Env{ServerBin: scenariotest.Env.ServerBin, LogDir: dir}); !line.Passed() {
			t.Fatalf("%s", report.Format(line))
		}
		_, err := os.Stat(filepath.Join(dir, report.NoServerNote(name)))
		if gotNote := err == nil; gotNote != wantNote {
			t.Errorf("%s: note present %v, want %v", name, gotNote, wantNote)
		}
	}
}

// TestTimeoutFails: a scenario whose context its runner's bound ended
// (a *TimeoutError cause) FAILs naming the bound; any other cause leaves
// it INTERRUPTED.
func TestTimeoutFails(t *testing.T) {
	c, _ := scenario.Registry(Cases()).Lookup("decoder_split_model")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&scenario.TimeoutError{After: 50 * time.Millisecond, Bound: "--timeout"})
	line := c.Run(ctx, scenariotest.Env)
	if line.Verdict != report.Fail || !strings.HasPrefix(line.Why(), "timed out after 50ms (--timeout)") {
		t.Errorf("got %s, want FAIL why=[timed out after 50ms (--timeout)...]", report.Format(line))
	}
}
