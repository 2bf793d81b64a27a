package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/chaos"
	"github.com/rpcbench/rpcbench/internal/leftover"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// chaosRun runs one chaos seed for 8 s with every fault its store
// survives, and every check must pass. The schedule, the check lines and
// the CHAOS line go to the log directory as NAME.chaos.txt; the history
// and the server logs, several MB, stay in a temporary directory.
func chaosRun(t *scenario.T, seed int64, store string, servers int) {
	res := runChaos(t, seed, 8*time.Second, store, servers, chaos.DefaultFaults(store))
	for _, c := range res.Checks {
		scenario.Expectf(t, c.Name, c.Verdict, report.Pass, "%s; replay: %s", c.Detail, res.Replay())
	}
	chaosCounts(t, res)
}

// chaosLiarSeed and chaosLiarFor are the seed and length of the lying
// server's negative control: three spells of the lie.
const (
	chaosLiarSeed = 4
	chaosLiarFor  = 3 * time.Second
)

// negativeControlLyingServer runs chaos against a server whose only
// fault is the lie: for three spells it executes every debit and
// answers UNAVAILABLE, which says it did not. The exactly-once checker
// must flag the keyed debits whose callers were told they failed while
// the server's log shows them executed; the right-caller checker has
// nothing to flag, the lie handing no answer to a wrong caller.
func negativeControlLyingServer(t *scenario.T) {
	res := runChaos(t, chaosLiarSeed, chaosLiarFor, chaos.StoreMemory, 1, []string{chaos.NemLie})
	t.Field("expectViolation", true)
	for _, c := range res.Checks {
		switch c.Name {
		case chaos.CheckExactlyOnce:
			scenario.Expectf(t, c.Name, c.Verdict, report.Fail, "%s; the lie left no keyed debit executed behind a failure; replay: %s", c.Detail, res.Replay())
			scenario.AtLeast(t, "failedExecuted", c.Counts["failed_executed"], 1, "no keyed debit answered as failed was executed: "+c.Detail)
		case chaos.CheckRightCaller:
			scenario.Expectf(t, c.Name, c.Verdict, report.Pass, "%s; replay: %s", c.Detail, res.Replay())
		default:
			// Balances that moved behind failures are not linearizable
			// either, but whether a spell met a debit of each account
			// is the run's timing.
			t.Volatile(c.Name, c.Verdict)
		}
	}
	chaosCounts(t, res)
}

// chaosCounts records the run's nemesis errors, which must be none, and
// its operation counts.
func chaosCounts(t *scenario.T, res chaos.Result) {
	scenario.Expect(t, "nemesisErrors", len(res.NemesisErrors), 0)
	t.Volatile("ops", len(res.Ops))
	t.Volatile("ok", res.OK)
	t.Volatile("failed", res.Failed)
	t.Volatile("unknown", res.Unknown)
}

// runChaos runs one chaos seed for d with faults, records the schedule
// as fields and writes the chaos note, and returns the result.
func runChaos(t *scenario.T, seed int64, d time.Duration, store string, servers int, faults []string) chaos.Result {
	out, err := leftover.MkdirTemp("", t.Name)
	if err != nil {
		t.Fatalf("chaos: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(out) })
	o := chaos.DefaultOptions()
	o.Seed, o.Duration, o.Store, o.Servers, o.Faults = seed, d, store, servers, faults
	o.Out, o.ServerBin = out, t.Env.ServerBin
	if store == chaos.StorePostgres {
		if t.Env.Postgres == nil {
			t.Fatalf("%v", scenario.ErrNoPostgres)
		}
		o.Postgres = t.Env.Postgres
	}
	sched := chaos.Schedule(o)
	t.Field("seed", seed)
	t.Field("store", store)
	t.Field("servers", servers)
	t.Field("schedule", chaos.Digest(sched))
	t.Field("faults", len(sched))
	res, err := chaos.Run(t.Ctx, o)
	if err != nil {
		t.Fatalf("chaos: %v", err)
	}
	sb, _ := os.ReadFile(filepath.Join(out, chaos.ScheduleFile))
	note := string(sb) + strings.Join(res.Lines(), "\n") + "\n"
	t.Servers++ // its servers' logs stay with the history; this note stands for them
	if err := os.WriteFile(filepath.Join(t.Env.LogDir, report.ChaosNote(t.Name)), []byte(note), 0o644); err != nil {
		t.Check(false, "chaos note: %v", err)
	}
	return res
}
