package target

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/fakestack"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/schema"
)

// serveBank serves the fake server mode's Bank on h2c in process and
// returns its address.
func serveBank(t *testing.T, mode string) string {
	t.Helper()
	addr, stop, err := fakestack.ServeBank(mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr
}

// bankService judges the Bank at addr as a user would: its .proto, a
// debit of 1 as the write, and, with oracle, a get's balance as the
// observe oracle; with slow, a debit whose handler sleeps 400ms.
func bankService(t *testing.T, addr string, oracle, slow bool) *Service {
	t.Helper()
	s, err := bankServiceOf(addr, nil, "acct-T", oracle, slow)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bankServiceOf is bankService on account, by sch (nil: the .proto).
func bankServiceOf(addr string, sch *schema.Schema, account string, oracle, slow bool) (*Service, error) {
	var err error
	if sch == nil {
		if sch, err = schema.FromProto(context.Background(), []string{"../../proto"}, "rpcbench/bank/v1/bank.proto"); err != nil {
			return nil, err
		}
	}
	// A late window short for the test: only the late fake executes
	// after answering, and its test sets the window it needs.
	s := &Service{Addr: addr, Name: "fake-bank", Settle: 20 * time.Millisecond, LateWindow: 50 * time.Millisecond, Trials: 5}
	if s.Method, err = sch.Method("rpcbench.bank.v1.Bank/Debit"); err != nil {
		return nil, err
	}
	if s.Request, err = s.Method.Request(`{"account":"` + account + `","amount":1}`); err != nil {
		return nil, err
	}
	if slow {
		if s.Slow, err = s.Method.Request(`{"account":"` + account + `","amount":1,"sleepMs":400}`); err != nil {
			return nil, err
		}
		s.SlowFor = 400 * time.Millisecond
	}
	if oracle {
		o := &Observe{Field: "balance"}
		if o.Method, err = sch.Method("rpcbench.bank.v1.Bank/Get"); err != nil {
			return nil, err
		}
		if o.Request, err = o.Method.Request(`{"account":"` + account + `"}`); err != nil {
			return nil, err
		}
		s.Oracle = o
	}
	return s, nil
}

// run runs the named rows against s, one after the other, as rpcbench
// target does, and returns their lines by name.
func run(t *testing.T, s *Service, names ...string) map[string]report.Line {
	t.Helper()
	out := map[string]report.Line{}
	for _, c := range Cases(s) {
		if len(names) > 0 && !strings.Contains(" "+strings.Join(names, " ")+" ", " "+c.Name+" ") {
			continue
		}
		out[c.Name] = c.Run(context.Background(), scenario.Env{LogDir: t.TempDir()})
	}
	return out
}

// field is the value of key in l, "" when absent.
func field(l report.Line, key string) string {
	for _, f := range l.Fields {
		if f.Key == key {
			return f.Value
		}
	}
	return ""
}

// A service with no bug passes every row, judged by the oracle. Each row
// judges a bank of its own, so that they run at once (goroutines, not
// parallel subtests, which go test runs two at a time on two cores:
// these wait, they do not compute).
func TestGoodServicePasses(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for _, name := range Names() {
		if NeedsCommand(name) {
			continue // cmd/rpcbench's TestTargetLifecycle starts a service for them
		}
		s := bankService(t, serveBank(t, fakestack.SrvGood), true, true)
		dir := t.TempDir()
		wg.Go(func() {
			if _, err := s.Calibrate(context.Background()); err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			if s.Oracle.PerExec != -1 {
				t.Errorf("%s: calibrated %+d per execution, want -1: a debit of 1", name, s.Oracle.PerExec)
			}
			l := runIn(dir, s, name)
			if l.Verdict != report.Pass {
				t.Errorf("%s", report.Format(l))
				return
			}
			for _, f := range l.Fields {
				if f.Kind == report.Outcome && f.Value != "holds" {
					t.Errorf("%s: %s=%s, want holds", name, f.Key, f.Value)
				}
			}
			if field(l, "stack") != "fake-bank" || field(l, "config") != Config || !strings.HasPrefix(field(l, "scenario"), "grpcserver_") && field(l, "scenario") != name {
				t.Errorf("%s: stack=%s config=%s scenario=%s", name, field(l, "stack"), field(l, "config"), field(l, "scenario"))
			}
		})
	}
	wg.Wait()
}

// runIn runs row name against s with its logs in dir.
func runIn(dir string, s *Service, name string) report.Line {
	for _, c := range Cases(s) {
		if c.Name == name {
			return c.Run(context.Background(), scenario.Env{LogDir: dir})
		}
	}
	panic("no row " + name)
}

// Without an oracle, executions are unknown: the rows that need them
// are n/a, never a pass; the ones that do not are still judged.
func TestNoOracleIsUnknown(t *testing.T) {
	t.Parallel()
	s := bankService(t, serveBank(t, fakestack.SrvGood), false, false)
	lines := run(t, s)
	for name, l := range lines {
		want := report.NotApplicable
		if name == "target_bad_frame" || name == "target_bad_message" {
			want = report.Pass // isolation needs no oracle; bad_message's ok_iff is unsupported beside it
		}
		if l.Verdict != want {
			t.Errorf("%s: %s, want %s", name, report.Format(l), want)
		}
		if name != "target_bad_frame" && field(l, "executions") != "unknown" {
			t.Errorf("%s: executions=%q, want unknown", name, field(l, "executions"))
		}
	}
	if got := field(lines["target_timeout_0n"], report.WhyKey); !strings.Contains(got, "no execution oracle") {
		t.Errorf("target_timeout_0n why=%q, want it to say there is no oracle", got)
	}
	if got := field(lines["target_cancel_stops_handler"], report.WhyKey); !strings.Contains(got, "--slow-data") {
		t.Errorf("target_cancel_stops_handler why=%q, want it to name --slow-data", got)
	}
}

// Each fake with one bug is caught by its row, through target alone.
func TestBugsCaught(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for _, c := range []struct {
		mode, row, inv string
		perExec        int64
	}{
		{fakestack.SrvExpired, "target_timeout_0n", "srv_expired_not_executed", 0},
		{fakestack.SrvExpired, "target_body_after_deadline", "srv_expired_not_executed", 0},
		{fakestack.SrvNoCancel, "target_cancel_stops_handler", "srv_cancel_stops_handler", 0},
		// Answers DEADLINE_EXCEEDED at once and executes 300ms later:
		// the calibration call cannot measure it, so it is given.
		{fakestack.SrvLate, "target_timeout_1m", "srv_ok_iff_executed", -1},
	} {
		s := bankService(t, serveBank(t, c.mode), true, true)
		s.Oracle.PerExec = c.perExec
		s.LateWindow = 400 * time.Millisecond // the late fake executes 300ms after answering
		dir := t.TempDir()
		wg.Go(func() {
			if c.perExec == 0 {
				if _, err := s.Calibrate(context.Background()); err != nil {
					t.Errorf("%s: %v", c.mode, err)
					return
				}
			}
			l := runIn(dir, s, c.row)
			if l.Verdict != report.Fail || field(l, c.inv) != "violated" || !strings.Contains(field(l, report.WhyKey), c.inv+" violated") {
				t.Errorf("%s: %s, want FAIL with %s:=violated", c.mode, report.Format(l), c.inv)
			}
		})
	}
	wg.Wait()
}

// An oracle that cannot count is an error before any row: the phantom
// bank reports every debit executed and applies none, so the balance
// never moves; a calibration call the service refuses says so too.
func TestOracleErrors(t *testing.T) {
	t.Parallel()
	s := bankService(t, serveBank(t, fakestack.SrvPhantom), true, false)
	if _, err := s.Calibrate(context.Background()); err == nil || !strings.Contains(err.Error(), "did not move") {
		t.Errorf("phantom: %v, want an error saying the field did not move", err)
	}
	s = bankService(t, serveBank(t, fakestack.SrvLate), true, false)
	if _, err := s.Calibrate(context.Background()); err == nil || !strings.Contains(err.Error(), "DEADLINE_EXCEEDED: give --per-exec") {
		t.Errorf("late: %v, want an error naming the answer and --per-exec", err)
	}
	// A field something else moves: the rows are an ERROR naming it.
	s = bankService(t, serveBank(t, fakestack.SrvGood), true, false)
	s.Oracle.PerExec = -3
	l := run(t, s, "target_timeout_1m")["target_timeout_1m"]
	if l.Verdict != report.Error || !strings.Contains(field(l, report.WhyKey), "not a whole number of executions") {
		t.Errorf("%s, want an ERROR saying the move is no whole number of executions", report.Format(l))
	}
}

// A service that is not there is an ERROR naming it.
func TestServiceGone(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := bankService(t, addr, false, false)
	l := run(t, s, "target_bad_frame")["target_bad_frame"]
	if l.Verdict != report.Error || !strings.Contains(field(l, report.WhyKey), addr) {
		t.Errorf("%s, want an ERROR naming %s", report.Format(l), addr)
	}
}
