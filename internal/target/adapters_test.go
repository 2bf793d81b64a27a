package target

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/expectations"
	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/outcome"
	"github.com/rpcbench/rpcbench/internal/pins"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/schema"
	"github.com/rpcbench/rpcbench/internal/sut"
)

// raceCell reports whether a timeout row's cell is a race of each call's
// own: whether an executed call is answered as one is decided per call,
// and the server section, sending hundreds or thousands of them, some at
// once, pins violations that a few calls one at a time may not show. A
// pinned violation that target sees hold there is logged, not failed.
func raceCell(row, inv string) bool {
	return strings.HasPrefix(row, "target_timeout_") && inv == judge.InvSrvOKIffExec
}

// TestServerAdaptersAgree judges each shipped server adapter as an
// opaque running service, by the Bank's .proto and a get's balance as
// the oracle, and holds target to two things: its cells agree with the
// server section's pins for the stack, and the executions its oracle
// counted are those the adapter's own record shows (the server's log,
// which target never reads, judges target's oracle).
func TestServerAdaptersAgree(t *testing.T) {
	t.Parallel()
	// The stacks at once, in goroutines: go test runs parallel subtests
	// two at a time on two cores, and these wait on the adapters.
	var stacks sync.WaitGroup
	for _, st := range cut.Stacks() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		bin, _, err := st.Find(ctx, filepath.Join("..", "..", "bin"))
		if err != nil {
			if cut.Required() {
				t.Fatalf("%v; %s=1 demands it", err, cut.EnvRequire)
			}
			t.Logf("%s: skipped: %v", st.Name, err)
			continue
		}
		stacks.Go(func() {
			srv, err := sut.Start(ctx, sut.Spec{Bin: bin, Args: []string{"serve"}, Scenario: "target"})
			if err != nil {
				t.Errorf("%s: %v", st.Name, err)
				return
			}
			defer srv.Close()
			// Each row judges an account of its own, so that the rows run
			// at once against the one adapter; rpcbench target runs them
			// one after the other, as a user's oracle is one field.
			var sch *schema.Schema
			if st.Name == "grpc-go" {
				// grpc-go's adapter serves reflection: the schema comes
				// from the service itself, as a user's would.
				if sch, err = schema.FromReflection(ctx, srv.Info().Addr); err != nil {
					t.Errorf("%s: %v", st.Name, err)
					return
				}
				if want := "reflection grpc.reflection.v1.ServerReflection at "; !strings.HasPrefix(sch.Source, want) {
					t.Errorf("schema from %q, want %q", sch.Source, want)
				}
			}
			f, err := expectations.Files.Open(st.Name + ".txt")
			if err != nil {
				t.Errorf("%s: %v", st.Name, err)
				return
			}
			p, err := pins.Parse(st.Name, st.Name+".txt", f, func(pins.Key) error { return nil })
			f.Close()
			if err != nil {
				t.Errorf("%s: %v", st.Name, err)
				return
			}
			var mu sync.Mutex
			counted := map[string]int{}
			var wg sync.WaitGroup
			for i, name := range Names() {
				if !InServerSection(name) {
					continue // target's own rows: no server-section pins to agree with
				}
				account := fmt.Sprintf("acct-T%d", i)
				s, err := bankServiceOf(srv.Info().Addr, sch, account, true, true)
				if err != nil {
					t.Errorf("%s: %v", st.Name, err)
					continue
				}
				s.Name, s.Trials = st.Name, 5
				if _, err := s.Calibrate(ctx); err != nil {
					t.Errorf("%s: %s: %v", st.Name, name, err)
					continue
				}
				wg.Go(func() {
					var c scenario.Case
					for _, x := range Cases(s) {
						if x.Name == name {
							c = x
						}
					}
					l := c.Run(ctx, scenario.Env{LogDir: t.TempDir()})
					if l.Verdict == report.Error {
						t.Errorf("%s", report.Format(l))
						return
					}
					n := 1 // the calibration call
					if m, err := strconv.Atoi(field(l, "executions")); err == nil {
						n += m
					}
					mu.Lock()
					counted[account] = n
					mu.Unlock()
					for _, f := range l.Fields {
						if f.Kind != report.Outcome {
							continue
						}
						got, err := outcome.Parse(f.Value)
						if err != nil {
							t.Error(err)
							return
						}
						k := pins.Key{Config: "server", Scenario: field(l, "scenario"), Invariant: f.Key}
						pin, pinned := p.Lookup(k)
						switch {
						case pinned && pin.Sometimes:
						case pinned && got == outcome.Holds && raceCell(c.Name, f.Key):
							t.Logf("%s: %s holds in %d calls one at a time; the server section pins it violated (%s)", c.Name, f.Key, s.Trials, pin.Reason)
						case pinned && got != outcome.Violated, !pinned && got != outcome.Holds:
							t.Errorf("%s: %s=%s, the server section's pins say %s\n%s", c.Name, f.Key, got, map[bool]string{true: "violated", false: "holds"}[pinned], report.Format(l))
						}
					}
				})
			}
			wg.Wait()
			// The adapter's record: every debit of each row's account it
			// executed (each row's last read came LateWindow after its
			// last call).
			execs := map[string]int{}
			for _, e := range srv.Events() {
				if e.Type == "exec" && e.Method == "Debit" {
					execs[e.Account]++
				}
			}
			for account, n := range counted {
				if execs[account] != n {
					t.Errorf("%s: target's oracle counted %d executions; %s's own record shows %d", account, n, st.Name, execs[account])
				}
			}
		})
	}
	stacks.Wait()
}
