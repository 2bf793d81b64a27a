package judge

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rpcbench/rpcbench/internal/leftover"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// A Control is a negative control of the judge itself: one of the
// suite's cases, run with a fake stack (package fakestack: this very
// binary, started with an environment that names the fake) in its
// stack's column, and its line read. The control passes only when the
// judge gave that case the verdict the fake's one bug calls for, for
// the reason it calls for: a judge that stopped counting executions,
// believed an adapter's OK, or missed a code, would pass the fake, and
// the control fails. The evidence then shows the judge catching each
// kind of bug it exists for, run after run.
type Control struct {
	Name, Doc string
	// Case is the suite's case to run, in a column of Stack.
	Case, Stack string
	// Env names the fake: fakestack.EnvAdapter or EnvServer and its
	// mode, as KEY=VALUE.
	Env []string
	// RealEnv, when set, is the variable through which the fake learns
	// the stack's real adapter, which it wraps.
	RealEnv string
	// Verdict is the verdict the judge must give the case, and Want the
	// texts its line must hold: what names the bug.
	Verdict report.Verdict
	Want    []string
}

// controlCases are the suite's controls as cases.
func controlCases(s Suite) []scenario.Case {
	var out []scenario.Case
	judged := scenario.Registry(append(grpcCases(s), srvCases(s)...))
	for _, c := range s.Controls {
		// A control starts a server when its case does: one of a
		// server adapter's column starts none, and leaves a note.
		inner, _ := judged.Lookup(c.Case)
		out = append(out, scenario.Case{Name: c.Name, Group: s.Group, Doc: c.Doc,
			Needs:    []string{scenario.NeedsAdapter(c.Stack)},
			NoServer: inner.NoServer,
			Body:     func(t *scenario.T) { runControl(t, s, c) }})
	}
	return out
}

// runControl runs c's case with the fake in its stack's place, in a
// log directory of its own, and checks the verdict the judge gave it.
// The inner case's server log becomes the control's.
func runControl(t *scenario.T, s Suite, c Control) {
	inner, ok := scenario.Registry(s.Cases()).Lookup(c.Case)
	if !ok {
		t.Fatalf("control %s: no case %s", c.Name, c.Case)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("this binary, the fake: %v", err)
	}
	dir, err := leftover.MkdirTemp("", "control")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e := t.Env
	e.LogDir = dir
	e.Adapters = maps.Clone(t.Env.Adapters)
	e.Adapters[c.Stack] = scenario.BinAdapter(self)
	// A test binary built with -race sleeps a second at exit, past the
	// harness's bound for an adapter to exit once its stdin ends.
	e.AdapterEnv = append(slices.Clone(c.Env), "GORACE=atexit_sleep_ms=0")
	if c.RealEnv != "" {
		e.AdapterEnv = append(e.AdapterEnv, c.RealEnv+"="+t.Env.Adapters[c.Stack].Client[0])
	}
	line := inner.Run(t.Ctx, e)
	text := report.Format(line)
	keepLogs(t, dir, inner.Name)
	t.Field("case", c.Case)
	t.Field("fake", strings.Join(c.Env, " "))
	t.Field("verdict", line.Verdict)
	var missing []string
	for _, w := range c.Want {
		if !strings.Contains(text, w) {
			missing = append(missing, w)
		}
	}
	t.Field("shows", fmt.Sprintf("%d of %d", len(c.Want)-len(missing), len(c.Want)))
	t.Check(line.Verdict == c.Verdict && len(missing) == 0,
		"the judge gave %s, with the fake in %s's column, %s; want %s, its line holding %q: %s",
		c.Case, c.Stack, line.Verdict, c.Verdict, missing, text)
}

// keepLogs copies the inner case's logs in dir (its server's, its
// adapter's) into the control's log directory, each renamed as the
// control's own.
func keepLogs(t *scenario.T, dir, inner string) {
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, e := range es {
		// The inner case's note that it started no server is the
		// control's to write, in its own name.
		if !strings.Contains(e.Name(), inner) || e.Name() == report.NoServerNote(inner) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatalf("%v", err)
		}
		name := strings.Replace(e.Name(), inner, t.Name, 1)
		if err := os.WriteFile(filepath.Join(t.Env.LogDir, name), b, 0o644); err != nil {
			t.Fatalf("%v", err)
		}
		if report.ServerLogNumber(name, t.Name) > 0 {
			t.Servers++
		}
	}
}
