package conform

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// testConfig keeps the slow requests short; the timeout stays the
// default, so that a loaded machine does not fail a conforming server.
func testConfig(addr string) Config {
	cfg := DefaultConfig(addr)
	cfg.Slow = 100 * time.Millisecond
	return cfg
}

func names(cs []Check, verdict report.Verdict) []string {
	var out []string
	for _, c := range cs {
		if c.Verdict == verdict {
			out = append(out, c.Name)
		}
	}
	return out
}

func allNames() []string {
	var out []string
	for _, c := range checks {
		out = append(out, c.name)
	}
	return out
}

func run(t *testing.T, cfg Config) Result {
	t.Helper()
	res, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := len(checks)
	if cfg.Drain {
		want++
	}
	if got := len(res.Checks); got != want {
		t.Fatalf("Run returned %d checks, want %d", got, want)
	}
	return res
}

func logLines(t *testing.T, res Result) {
	t.Helper()
	for _, c := range res.Checks {
		t.Log(c.Line())
	}
}

// TestRealServer: the project's own server passes every check, in its
// default configuration, in chunk mode (answers split anywhere, several
// per read) and with one worker (answers in request order, which SPEC.md
// allows).
func TestRealServer(t *testing.T) {
	chunk := server.DefaultConfig()
	chunk.Chunk = true
	one := server.DefaultConfig()
	one.Workers = 1
	tests := []struct {
		name string
		cfg  server.Config
	}{
		{"default", server.DefaultConfig()},
		{"chunk", chunk},
		{"one_worker", one},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, addr := servertest.Start(t, tt.cfg)
			res := run(t, testConfig(addr))
			if failed := names(res.Checks, report.Fail); len(failed) > 0 {
				logLines(t, res)
				t.Errorf("failed checks %v, want none", failed)
			}
			if got, want := res.Summary(), "11 passed, 0 failed"; got != want {
				t.Errorf("summary %q, want %q", got, want)
			}
		})
	}
}

// TestFakes: each non-conforming server fails exactly the checks made for
// its defect, with a detail that names it, and passes every other; the
// same fake without the defect passes all.
func TestFakes(t *testing.T) {
	tests := []struct {
		name       string
		bugs       fakeBugs
		wantFailed []string
		// wantDetail is part of the first failed check's detail.
		wantDetail string
	}{
		{"conforming", fakeBugs{}, nil, ""},
		{"fifo_ids", fakeBugs{fifoIDs: true}, []string{"answers_matched_by_id"},
			"answers must be matched to requests by ID"},
		{"reads_past_bad_frame", fakeBugs{readPastBadFrame: true}, []string{"bad_frame_closes_connection"},
			"id 4, the bad frame or a frame after it, was answered"},
		{"ignores_keys", fakeBugs{ignoreKeys: true}, []string{"idempotent_replay", "key_reuse_refused", "duplicate_waits_for_original"},
			"secondReplayed=false, want true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, testConfig(startFake(t, tt.bugs)))
			failed := names(res.Checks, report.Fail)
			if diff := cmp.Diff(tt.wantFailed, failed); diff != "" {
				logLines(t, res)
				t.Fatalf("failed checks (-want +got):\n%s", diff)
			}
			if tt.wantDetail == "" {
				return
			}
			i := slices.IndexFunc(res.Checks, func(c Check) bool { return c.Name == tt.wantFailed[0] })
			if d := res.Checks[i].Detail; !strings.Contains(d, tt.wantDetail) {
				t.Errorf("%s detail = %q, want it to contain %q", tt.wantFailed[0], d, tt.wantDetail)
			}
		})
	}
}

// TestReadsPastBadFrameDetail: the balance shows which debits the
// non-conforming server executed.
func TestReadsPastBadFrameDetail(t *testing.T) {
	res := run(t, testConfig(startFake(t, fakeBugs{readPastBadFrame: true})))
	i := slices.IndexFunc(res.Checks, func(c Check) bool { return c.Name == "bad_frame_closes_connection" })
	want := "CHECK bad_frame_closes_connection FAIL id 4, the bad frame or a frame after it, was answered: nothing after a bad frame may be interpreted; " +
		"debits executed: ids 2,4; want only 2: the bad frame and what follows it must not be interpreted [answered=2,4 otherConn=answers balance=899]"
	if got := res.Checks[i].Line(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestUnresponsive: a server that answers ctl.ping but no business
// request fails every check that needs an answer, each within its
// timeout, instead of hanging the run.
func TestUnresponsive(t *testing.T) {
	cfg := testConfig(startFake(t, fakeBugs{silent: true}))
	cfg.Timeout, cfg.Slow = 100*time.Millisecond, 10*time.Millisecond
	res := run(t, cfg)
	// length_prefix_rejected needs no business answer: its verdict is the
	// fake's, and is not what this test is about.
	const exempt = "length_prefix_rejected"
	failed := slices.DeleteFunc(names(res.Checks, report.Fail), func(n string) bool { return n == exempt })
	if diff := cmp.Diff(slices.DeleteFunc(allNames(), func(n string) bool { return n == exempt }), failed); diff != "" {
		logLines(t, res)
		t.Errorf("failed checks (-want +got):\n%s", diff)
	}
	// The bound is the check's timeout; the slack is for the race
	// detector on a loaded machine, not a speed requirement.
	const slack = 2 * time.Second
	for _, c := range res.Checks {
		if c.Elapsed > cfg.Timeout+slack {
			t.Errorf("%s took %v, want at most its timeout %v (+%v)", c.Name, c.Elapsed, cfg.Timeout, slack)
		}
		if c.Name != exempt && !strings.Contains(c.Detail, "nothing within the check's timeout (100ms)") && !strings.Contains(c.Detail, "DEADLINE_EXCEEDED") {
			t.Errorf("%s detail %q, want it to say no answer came", c.Name, c.Detail)
		}
	}
}

// serveEach accepts connections on a fresh loopback port until the test
// ends, and serves each with serve, which owns the connection.
func serveEach(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { serve(c) })
		}
	})
	return ln.Addr().String()
}

// httpBadRequest is what an HTTP/1.1 server answers bytes that are not a
// request.
const httpBadRequest = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"

// TestNotServing: no check runs when the first ctl.ping is not answered
// OK, and the error says what the server did instead.
func TestNotServing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()

	// A silent server reads what it is sent until the client hangs up.
	silent := serveEach(t, func(c net.Conn) {
		defer c.Close()
		io.Copy(io.Discard, c)
	})
	// The others read the ping first, so that their answer is one.
	answer := func(b string) string {
		return serveEach(t, func(c net.Conn) {
			defer c.Close()
			c.Read(make([]byte, 512))
			io.WriteString(c, b)
		})
	}
	hangUp := serveEach(t, func(c net.Conn) { c.Close() })
	unavailable, err := proto.AppendFrame(nil, &proto.Frame{Type: proto.TypeResponse, ID: 1, Status: proto.StatusUnavailable, Method: "ctl.ping", Payload: []byte("busy")})
	if err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name, addr string
		want       []string
		wantFail   PingFailure
	}{
		{"refused", refused, []string{"conform: " + refused + ": connection refused"}, PingRefused},
		{"silent", silent, []string{"conform: " + silent + ": accepted the connection but did not answer ctl.ping within 100ms"}, PingSilent},
		{"http", answer(httpBadRequest), []string{`answered ctl.ping with bytes that look like HTTP ("HTTP/1.1 400 Bad Request"): is this an HTTP server?`}, PingHTTP},
		{"ssh", answer("SSH-2.0-OpenSSH_9.6\r\n"), []string{
			`answered ctl.ping with bytes that are not a frame: 53 53 48 2d 32 2e 30 2d 4f 70 65 6e 53 53 48 5f ("SSH-2.0-OpenSSH_"...)`,
			"proto: frame length",
		}, PingNotFrame},
		{"unavailable", answer(string(unavailable)), []string{"did not answer ctl.ping OK: ctl.ping answered UNAVAILABLE busy"}, PingBadAnswer},
		{"hang_up", hangUp, []string{"accepted the connection and closed it without answering ctl.ping"}, PingClosed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(tt.addr)
			cfg.Timeout, cfg.Slow = 100*time.Millisecond, 10*time.Millisecond
			res, err := Run(context.Background(), cfg, func(c Check) { t.Errorf("check %s ran", c.Name) })
			if err == nil {
				t.Fatal("Run: no error, want one")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("got error %q, want it to say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "unreachable") {
				t.Errorf("got error %q, want it not to call a server that was reached unreachable", err)
			}
			pe, ok := errors.AsType[*PingError](err)
			switch {
			case !ok || !errors.Is(err, ErrPing):
				t.Errorf("got error %v (%T), want a *PingError wrapping ErrPing", err, err)
			case pe.Failure != tt.wantFail:
				t.Errorf("got failure %v, want %v", pe.Failure, tt.wantFail)
			}
			if len(res.Checks) != 0 {
				t.Errorf("got %d checks, want none", len(res.Checks))
			}
		})
	}
}

func TestPingFailureString(t *testing.T) {
	tests := []struct {
		f    PingFailure
		want string
	}{
		{PingRefused, "refused"},
		{PingHTTP, "http"},
		{PingBadAnswer, "bad_answer"},
		{0, "UNKNOWN_PING_FAILURE_0"},
		{PingBadAnswer + 1, "UNKNOWN_PING_FAILURE_8"},
		{-1, "UNKNOWN_PING_FAILURE_-1"},
	}
	for _, tt := range tests {
		if got := tt.f.String(); got != tt.want {
			t.Errorf("PingFailure(%d).String() = %q, want %q", int(tt.f), got, tt.want)
		}
	}
}

// TestCanceled: a run whose context ends stops after the current check
// and returns the context's error with the checks so far.
func TestCanceled(t *testing.T) {
	_, addr := servertest.Start(t, server.DefaultConfig())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen []string
	res, err := Run(ctx, testConfig(addr), func(c Check) {
		seen = append(seen, c.Name)
		cancel()
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run error %v, want %v", err, context.Canceled)
	}
	if want := allNames()[:1]; !cmp.Equal(seen, want) || len(res.Checks) != 1 {
		t.Errorf("checks run %v (result holds %d), want %v", seen, len(res.Checks), want)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string // part of the error; "" means valid
	}{
		{"default", func(*Config) {}, ""},
		{"no address", func(c *Config) { c.Addr = "" }, "no address"},
		{"short timeout", func(c *Config) { c.Timeout = 99 * time.Millisecond }, "at least 100ms"},
		{"no slow", func(c *Config) { c.Slow = 0 }, "slow 0s must be in"},
		{"slow too long", func(c *Config) { c.Slow = c.Timeout/4 + time.Millisecond }, "timeout/4"},
		{"long tag", func(c *Config) { c.Tag = strings.Repeat("t", maxTagLen+1) }, "longer than 40 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig("127.0.0.1:1")
			tt.mutate(&cfg)
			err := cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (!errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want an error wrapping %v saying %q", err, ErrConfig, tt.want)
			}
		})
	}
}

// TestKeysFit: the longest tag leaves every key within the wire's limit.
func TestKeysFit(t *testing.T) {
	for _, c := range checks {
		p := &probe{prefix: strings.Repeat("t", maxTagLen) + "-" + c.short}
		if k := p.name("k"); len(k) > 64 {
			t.Errorf("%s: key %q is %d bytes, over 64", c.name, k, len(k))
		}
	}
}

func TestCheckNames(t *testing.T) {
	seen := map[string]bool{}
	short := map[string]bool{}
	for _, c := range checks {
		if seen[c.name] || short[c.short] {
			t.Errorf("check %s (%s) repeats a name", c.name, c.short)
		}
		seen[c.name], short[c.short] = true, true
		if c.doc == "" {
			t.Errorf("check %s has no doc", c.name)
		}
	}
}

func TestParseOK(t *testing.T) {
	tests := []struct {
		payload string
		want    okAnswer
		wantErr string
	}{
		{"account=a balance=990 budget=300 exec=1 replayed=false", okAnswer{"a", 990, 300, 1, false}, ""},
		{"replayed=true exec=2 budget=0 balance=0 account=b", okAnswer{"b", 0, 0, 2, true}, ""},
		{"account=a balance=990 budget=300 exec=1", okAnswer{}, "no field replayed"},
		{"account=a balance=990 budget=300 exec=1 replayed=false extra=1", okAnswer{}, "fields beyond"},
		{"account=a balance=x budget=300 exec=1 replayed=false", okAnswer{}, `field balance="x"`},
		{"account=a balance=1 budget=-1 exec=1 replayed=false", okAnswer{}, `field budget="-1"`},
		{"account=a balance=1 budget=1 exec=1 replayed=1", okAnswer{}, `field replayed="1"`},
		{"account=a nonsense", okAnswer{}, "not key=value"},
	}
	for _, tt := range tests {
		got, err := parseOK([]byte(tt.payload))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("parseOK(%q): %v", tt.payload, err)
		case tt.wantErr == "" && got != tt.want:
			t.Errorf("parseOK(%q) = %+v, want %+v", tt.payload, got, tt.want)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("parseOK(%q) error %v, want one saying %q", tt.payload, err, tt.wantErr)
		}
	}
}

func TestExplain(t *testing.T) {
	amounts := map[uint64]int{2: 1, 3: 10, 4: 100}
	tests := []struct {
		spent int64
		want  []uint64
	}{
		{0, []uint64{}},
		{1, []uint64{2}},
		{101, []uint64{2, 4}},
		{111, []uint64{2, 3, 4}},
		{5, nil},
	}
	for _, tt := range tests {
		if got := explain(tt.spent, amounts); !cmp.Equal(got, tt.want) {
			t.Errorf("explain(%d) = %v, want %v", tt.spent, got, tt.want)
		}
	}
}

// TestDrainCheck: with Config.Drain, drain_finishes_taken runs last; it
// passes a real server, which the drain then stops, and fails a fake
// that answers ctl.drain OK and never drains.
func TestDrainCheck(t *testing.T) {
	for _, tt := range []struct {
		name   string
		addr   func(t *testing.T) string
		want   report.Verdict
		detail string
	}{
		{"real", func(t *testing.T) string { _, addr := servertest.Start(t, server.DefaultConfig()); return addr }, report.Pass, ""},
		{"fake_never_drains", func(t *testing.T) string { return startFake(t, fakeBugs{}) }, report.Fail, "drainConnID=-1, want 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(tt.addr(t))
			cfg.Drain = true
			res := run(t, cfg)
			last := res.Checks[len(res.Checks)-1]
			if last.Name != drainCheck.name || last.Verdict != tt.want || !strings.Contains(last.Detail, tt.detail) {
				logLines(t, res)
				t.Errorf("last check %s %v %q, want %s %v containing %q", last.Name, last.Verdict, last.Detail, drainCheck.name, tt.want, tt.detail)
			}
			if failed := names(res.Checks[:len(res.Checks)-1], report.Fail); len(failed) > 0 {
				t.Errorf("failed checks before the drain %v, want none", failed)
			}
		})
	}
}
