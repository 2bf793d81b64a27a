package target

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
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
	for _, st := range cut.Stacks() {
		t.Run(st.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			bin, _, err := st.Find(ctx, filepath.Join("..", "..", "bin"))
			if err != nil {
				if cut.Required() {
					t.Fatalf("%v; %s=1 demands it", err, cut.EnvRequire)
				}
				t.Skip(err)
			}
			srv, err := sut.Start(ctx, sut.Spec{Bin: bin, Args: []string{"serve"}, Scenario: "target"})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			s := bankService(t, srv.Info().Addr, true, true)
			if st.Name == "grpc-go" {
				// grpc-go's adapter serves reflection: the schema comes
				// from the service itself, as a user's would.
				sch, err := schema.FromReflection(ctx, srv.Info().Addr)
				if err != nil {
					t.Fatal(err)
				}
				if want := "reflection grpc.reflection.v1.ServerReflection at "; !strings.HasPrefix(sch.Source, want) {
					t.Errorf("schema from %q, want %q", sch.Source, want)
				}
				if s.Method, err = sch.Method("rpcbench.bank.v1.Bank/Debit"); err != nil {
					t.Fatal(err)
				}
				if s.Oracle.Method, err = sch.Method("rpcbench.bank.v1.Bank/Get"); err != nil {
					t.Fatal(err)
				}
			}
			s.Name, s.Trials = st.Name, 5
			s.SlowFor = 400 * time.Millisecond
			if _, err := s.Calibrate(ctx); err != nil {
				t.Fatal(err)
			}
			f, err := expectations.Files.Open(st.Name + ".txt")
			if err != nil {
				t.Fatal(err)
			}
			p, err := pins.Parse(st.Name, st.Name+".txt", f, func(pins.Key) error { return nil })
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			counted := 1 // the calibration call
			for _, c := range Cases(s) {
				l := c.Run(ctx, scenario.Env{LogDir: t.TempDir()})
				if l.Verdict == report.Error {
					t.Errorf("%s", report.Format(l))
					continue
				}
				if n, err := strconv.Atoi(field(l, "executions")); err == nil {
					counted += n
				}
				for _, f := range l.Fields {
					if f.Kind != report.Outcome {
						continue
					}
					got, err := outcome.Parse(f.Value)
					if err != nil {
						t.Fatal(err)
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
			}
			// The adapter's record: every debit of the judged account it
			// executed (each row's last read came LateWindow after its
			// last call).
			execs := 0
			for _, e := range srv.Events() {
				if e.Type == "exec" && e.Method == "Debit" && e.Account == "acct-T" {
					execs++
				}
			}
			if execs != counted {
				t.Errorf("target's oracle counted %d executions; %s's own record shows %d", counted, st.Name, execs)
			}
		})
	}
}
