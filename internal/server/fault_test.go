package server_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/fault"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

func TestParseFault(t *testing.T) {
	tests := []struct {
		in      string
		want    server.Fault
		wantErr string // substring of the error; empty for success
	}{
		{"kind=late method=get count=1 delay=150ms", server.Fault{Kind: server.FaultLate, Method: "get", Count: 1, Delay: 150 * time.Millisecond}, ""},
		{"kind=sleep delay=2s", server.Fault{Kind: server.FaultSleep, Delay: 2 * time.Second}, ""},
		{"  kind=unavailable  ", server.Fault{Kind: server.FaultUnavailable}, ""},
		{"kind=noreply count=0", server.Fault{Kind: server.FaultNoReply}, ""},
		{"kind=close", server.Fault{Kind: server.FaultClose}, ""},
		{"kind=partial", server.Fault{Kind: server.FaultPartial}, ""},
		{"kind=badmagic method=debit", server.Fault{Kind: server.FaultBadMagic, Method: "debit"}, ""},
		{"kind=unavailable_after_exec method=debit count=2", server.Fault{Kind: server.FaultUnavailableAfterExec, Method: "debit", Count: 2}, ""},
		{"", server.Fault{}, "kind is required"},
		{"method=get", server.Fault{}, "kind is required"},
		{"kind=explode", server.Fault{}, `unknown kind "explode"`},
		{"kind=", server.Fault{}, `unknown kind ""`},
		{"kind=late delay", server.Fault{}, `"delay" is not key=value`},
		{"kind=late count=-1", server.Fault{}, `count "-1" is not a whole number >= 0`},
		{"kind=late count=x", server.Fault{}, `count "x" is not a whole number >= 0`},
		{"kind=late delay=5", server.Fault{}, `delay "5" is not a duration >= 0`},
		{"kind=late delay=-1s", server.Fault{}, `delay "-1s" is not a duration >= 0`},
		{"kind=late colour=red", server.Fault{}, `unknown key "colour"`},
		{"kind=unavailable count=1 retry_after=200ms", server.Fault{Kind: server.FaultUnavailable, Count: 1, RetryAfter: 200 * time.Millisecond}, ""},
		{"kind=unavailable retry_after=1.5s", server.Fault{Kind: server.FaultUnavailable, RetryAfter: 1500 * time.Millisecond}, ""},
		{"kind=unavailable retry_after=never", server.Fault{Kind: server.FaultUnavailable, RetryAfter: fault.RetryNever}, ""},
		{"kind=unavailable retry_after=0s", server.Fault{}, `retry_after "0s" is neither a duration > 0 nor never`},
		{"kind=unavailable retry_after=-1", server.Fault{}, `retry_after "-1" is neither a duration > 0 nor never`},
		{"kind=unavailable retry_after=-1s", server.Fault{}, `retry_after "-1s" is neither a duration > 0 nor never`},
		{"kind=unavailable retry_after=soon", server.Fault{}, `retry_after "soon" is neither a duration > 0 nor never`},
		{"kind=late retry_after=200ms", server.Fault{}, "retry_after is only for kind=unavailable"},
		{"retry_after=never kind=sleep", server.Fault{}, "retry_after is only for kind=unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := server.ParseFault(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "server: fault ") {
					t.Errorf("ParseFault(%q) error = %v, want \"server: fault ...%s...\"", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFault(%q): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseFault(%q) (-want +got):\n%s", tt.in, diff)
			}
			again, err := server.ParseFault(got.String())
			if err != nil || again != got {
				t.Errorf("ParseFault(%q) = %+v, %v; want %+v (String round trip)", got.String(), again, err, got)
			}
		})
	}
}

func TestFaultString(t *testing.T) {
	tests := []struct {
		f    server.Fault
		want string
	}{
		{server.Fault{Kind: server.FaultUnavailable}, "kind=unavailable"},
		{server.Fault{Kind: server.FaultLate, Method: "get", Count: 1, Delay: 150 * time.Millisecond}, "kind=late method=get count=1 delay=150ms"},
		{server.Fault{Kind: server.FaultUnavailable, Count: 1, RetryAfter: 200 * time.Millisecond}, "kind=unavailable count=1 retry_after=200ms"},
		{server.Fault{Kind: server.FaultUnavailable, Method: "get", RetryAfter: fault.RetryNever}, "kind=unavailable method=get retry_after=never"},
		{server.Fault{Kind: server.FaultUnavailable, RetryAfter: -time.Second}, "kind=unavailable retry_after=never"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.f.String(); got != tt.want {
				t.Errorf("%+v.String() = %q, want %q", tt.f, got, tt.want)
			}
		})
	}
}

// TestUnavailableRetryAfter checks the payload an unavailable fault
// answers with, hint included, on a real server.
func TestUnavailableRetryAfter(t *testing.T) {
	tests := []struct {
		fault string
		want  string
	}{
		{"kind=unavailable", "injected unavailable"},
		{"kind=unavailable retry_after=200ms", "injected unavailable retry_after_ms=200"},
		{"kind=unavailable retry_after=1500us", "injected unavailable retry_after_ms=2"}, // rounded up, never early
		{"kind=unavailable retry_after=never", "injected unavailable retry_after_ms=-1"},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			_, addr := servertest.Start(t, server.DefaultConfig(), tt.fault)
			c := servertest.Dial(t, addr)
			c.Send(servertest.Request(1, bank.MethodGet, "account=acct-A"))
			got := c.Recv()
			if got.Status != proto.StatusUnavailable || string(got.Payload) != tt.want {
				t.Errorf("got %v %q, want UNAVAILABLE %q", got.Status, got.Payload, tt.want)
			}
		})
	}
}

// TestUnavailableAfterExec: the fault answers UNAVAILABLE, which says
// "not executed", for a debit the bank did execute, as its exec counter
// and the balance show.
func TestUnavailableAfterExec(t *testing.T) {
	srv, addr := servertest.Start(t, server.DefaultConfig(), "kind=unavailable_after_exec method=debit count=1")
	c := servertest.Dial(t, addr)
	c.Send(servertest.Request(1, bank.MethodDebit, "account=acct-L amount=10"))
	if got := c.Recv(); got.Status != proto.StatusUnavailable || string(got.Payload) != "injected unavailable after executing" {
		t.Errorf("debit: got %v %q, want UNAVAILABLE \"injected unavailable after executing\"", got.Status, got.Payload)
	}
	if n := servertest.Counter(t, srv, "exec.debit"); n != 1 {
		t.Errorf("exec.debit = %d, want 1: the fault executes before it answers", n)
	}
	c.Send(servertest.Request(2, bank.MethodGet, "account=acct-L"))
	got := c.Recv()
	if b := servertest.Fields(t, got.Payload)["balance"]; got.Status != proto.StatusOK || b != fmt.Sprint(bank.DefaultBalance-10) {
		t.Errorf("get after the debit: %v %q, want OK with balance=%d", got.Status, got.Payload, bank.DefaultBalance-10)
	}
}

func TestFaultKindString(t *testing.T) {
	tests := []struct {
		k    server.FaultKind
		want string
	}{
		{server.FaultLate, "late"},
		{server.FaultSleep, "sleep"},
		{server.FaultUnavailable, "unavailable"},
		{server.FaultNoReply, "noreply"},
		{server.FaultClose, "close"},
		{server.FaultPartial, "partial"},
		{server.FaultBadMagic, "badmagic"},
		{server.FaultUnavailableAfterExec, "unavailable_after_exec"},
		{server.FaultKind(0), "unknown_fault_0"},
		{server.FaultKind(99), "unknown_fault_99"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.k.String(); got != tt.want {
				t.Errorf("FaultKind(%d).String() = %q, want %q", uint8(tt.k), got, tt.want)
			}
		})
	}
}

// TestFaultUnknownMethod: a rule whose method the handler does not serve
// would never fire, so every way of installing one refuses it and names
// the methods there are. Control methods are not among them: no fault
// fires on those.
func TestFaultUnknownMethod(t *testing.T) {
	tests := []struct {
		rule string
		want string // the error, and ctl.fault's INVALID_ARGUMENT text; empty if accepted
	}{
		{"kind=noreply method=debt", `server: fault "kind=noreply method=debt": unknown method "debt" (want get, debit or echo)`},
		{"kind=late method=GET", `server: fault "kind=late method=GET": unknown method "GET" (want get, debit or echo)`},
		{"kind=close method=ctl.stats", `server: fault "kind=close method=ctl.stats": unknown method "ctl.stats" (want get, debit or echo)`},
		{"kind=late method=echo", ""},
		{"kind=noreply", ""},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			f, err := server.ParseFault(tt.rule)
			if err != nil {
				t.Fatalf("ParseFault(%q): %v", tt.rule, err)
			}
			check := func(t *testing.T, where string, err error) {
				t.Helper()
				if tt.want == "" {
					if err != nil {
						t.Errorf("%s: got error %v, want none", where, err)
					}
					return
				}
				var me *fault.MethodError
				if !errors.As(err, &me) || err.Error() != tt.want {
					t.Errorf("%s: got error %v, want a *fault.MethodError %s", where, err, tt.want)
					return
				}
				if got, ok := me.Rule.(server.Fault); !ok || got != f {
					t.Errorf("%s: MethodError.Rule got %+v, want %+v", where, me.Rule, f)
				}
			}
			t.Run("Config.Faults", func(t *testing.T) {
				cfg := server.DefaultConfig()
				cfg.Faults = []server.Fault{f}
				srv, err := server.New(cfg, bank.New(bank.NewMemory(), nil))
				if err == nil {
					srv.Close()
				}
				check(t, "server.New", err)
			})
			t.Run("AddFault", func(t *testing.T) {
				srv := servertest.New(t, server.DefaultConfig())
				defer srv.Close()
				check(t, "AddFault", srv.AddFault(f))
			})
			t.Run("ctl.fault", func(t *testing.T) {
				_, addr := servertest.Start(t, server.DefaultConfig())
				c := servertest.Dial(t, addr)
				c.Send(servertest.Request(1, serverapi.MethodFault, tt.rule))
				got := c.Recv()
				if tt.want == "" {
					if got.Status != proto.StatusOK {
						t.Errorf("ctl.fault %q: got %v %q, want OK", tt.rule, got.Status, got.Payload)
					}
					return
				}
				if got.Status != proto.StatusInvalidArgument || string(got.Payload) != tt.want {
					t.Errorf("ctl.fault %q: got %v %q, want INVALID_ARGUMENT %q", tt.rule, got.Status, got.Payload, tt.want)
				}
				// Nothing was installed: every business method is served
				// unfaulted.
				for id, m := range []string{bank.MethodGet, bank.MethodDebit, bank.MethodEcho} {
					c.Send(servertest.Request(uint64(id+2), m, "account=a amount=1"))
					if got := c.Recv(); got.Status != proto.StatusOK {
						t.Errorf("%s after the refused rule: got %v %q, want OK", m, got.Status, got.Payload)
					}
				}
			})
		})
	}
}
