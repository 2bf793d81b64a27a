package load

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestRollingNote(t *testing.T) {
	rows := []Row{
		{System: KeyRollingSteady, Key: KeyRollingSteady, G: 8, CallsPerSec: 40000, P99us: 200},
		{System: KeyRollingRestart, Key: KeyRollingRestart, G: 8, Rounds: 5, CallsPerSec: 30000, P99us: 500, Restarts: 17, Drained: 16, DrainedResent: 3},
		{System: KeyRollingSteady, Key: KeyRollingSteady, G: 64, CallsPerSec: 80000},
		{System: KeyRollingRestart, Key: KeyRollingRestart, G: 64, Rounds: 5, CallsPerSec: 20000, P99us: 900, Restarts: 15, Drained: 15},
		{System: KeyRollingRestart, Key: KeyRollingRestart, G: 512, Rounds: 1, CallsPerSec: 1, Restarts: 3, Drained: 3}, // no steady row at this G
	}
	want := "- rolling-restart G=8: 17 restarts over 5 rounds, 16 of them drained clean; the client re-sent 3 DRAINED attempts.\n" +
		"- rolling-restart G=64: 15 restarts over 5 rounds, 15 of them drained clean; the client re-sent 0 DRAINED attempts.\n" +
		"- rolling-restart G=512: 3 restarts over 1 rounds, 3 of them drained clean; the client re-sent 0 DRAINED attempts.\n" +
		"- rolling-restart / rolling-steady at G=8: calls/s 0.75, p99 2.50.\n" +
		"- rolling-restart / rolling-steady at G=64: calls/s 0.25, p99 n/a.\n"
	if got := rollingNote(rows); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestRunRollingRestart runs the rolling-restart row for real, with a
// few calls: three rpcservers restarted in turn, each drained by
// SIGTERM, while a p2c client makes gets of them. It checks that every
// call got its own account's answer, that the servers were restarted at
// least once each, and that each restart drained clean by the server's
// own log. It asserts nothing about speed.
func TestRunRollingRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and spawns the servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := DefaultOptions()
	o.Systems = []string{KeyRollingRestart}
	o.N, o.Warmup, o.Rounds, o.G = 300, 50, 1, []int{8, 64}
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(rep.Rows), len(o.G); got != want {
		t.Fatalf("rows: got %d, want %d", got, want)
	}
	for _, r := range rep.Rows {
		if r.TotalCalls < int64(o.N) || r.NonOK != 0 {
			t.Errorf("G=%d: got %d non-OK of %d calls (first: %s), want 0 of at least %d", r.G, r.NonOK, r.TotalCalls, r.FirstError, o.N)
		}
		if r.ExecErrors != 0 {
			t.Errorf("G=%d: %s", r.G, r.FirstExecError)
		}
		if r.Restarts < rollingServers {
			t.Errorf("G=%d: got %d restarts, want at least %d, one of each server", r.G, r.Restarts, rollingServers)
		}
		if r.Drained != r.Restarts {
			t.Errorf("G=%d: got %d of %d restarts drained clean, want all", r.G, r.Drained, r.Restarts)
		}
	}
	var b bytes.Buffer
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"8", "64"} {
		if line := "- rolling-restart G=" + g + ": "; !strings.Contains(b.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, b.String())
		}
	}
}
