package cases

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/chaos"
	"github.com/rpcbench/rpcbench/internal/report"
)

// chaosRun runs one chaos seed and reports its checks. The schedule, the
// check lines and the CHAOS line go to the log directory as
// NAME.chaos.txt; the history and the server logs, several MB, stay in a
// temporary directory.
func chaosRun(t *T, seed int64, store string, servers int) {
	out, err := os.MkdirTemp("", "rpcbench-"+t.name+"-")
	if err != nil {
		t.Fatalf("chaos: %v", err)
	}
	t.cleanup(func() { os.RemoveAll(out) })
	o := chaos.DefaultOptions()
	o.Seed, o.Duration, o.Store, o.Servers, o.Faults = seed, 8*time.Second, store, servers, chaos.DefaultFaults(store)
	o.Out, o.ServerBin = out, t.env.ServerBin
	if store == chaos.StorePostgres {
		if t.env.Postgres == nil {
			t.Fatalf("%v", ErrNoPostgres)
		}
		o.Postgres = t.env.Postgres
	}
	sched := chaos.Schedule(o)
	t.Field("seed", seed)
	t.Field("store", store)
	t.Field("servers", servers)
	t.Field("schedule", chaos.Digest(sched))
	t.Field("faults", len(sched))
	res, err := chaos.Run(t.ctx, o)
	if err != nil {
		t.Fatalf("chaos: %v", err)
	}
	for _, c := range res.Checks {
		expectf(t, c.Name, c.Verdict, report.Pass, "%s; replay: %s", c.Detail, res.Replay())
	}
	expect(t, "nemesisErrors", len(res.NemesisErrors), 0)
	t.Volatile("ops", len(res.Ops))
	t.Volatile("ok", res.OK)
	t.Volatile("failed", res.Failed)
	t.Volatile("unknown", res.Unknown)
	sb, _ := os.ReadFile(filepath.Join(out, chaos.ScheduleFile))
	note := string(sb) + strings.Join(res.Lines(), "\n") + "\n"
	t.servers++ // its servers' logs stay with the history; this note stands for them
	if err := os.WriteFile(filepath.Join(t.env.LogDir, report.ChaosNote(t.name)), []byte(note), 0o644); err != nil {
		t.Check(false, "chaos note: %v", err)
	}
}
