package grpcwire

import (
	"math"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// TestParseTimeoutDigits: grpc-timeout holds at most 8 digits, and
// grpc-go sends 8 for any deadline of 10 s or more (12000000u, 99999999m),
// so 8 digits decode to their duration and 9 are refused.
func TestParseTimeoutDigits(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"1n", time.Nanosecond, false},
		{"12000000u", 12 * time.Second, false},
		{"99999999m", 99999999 * time.Millisecond, false},
		{"00000001S", time.Second, false},
		{"99999999H", math.MaxInt64, false}, // past a Duration: clamped
		{"123456789m", 0, true},
		{"000000001S", 0, true},
		{"m", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseTimeout(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseTimeout(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestTimeoutDigitsOnWire: a request whose grpc-timeout has 8 digits is
// served with that budget; one with 9 is reset PROTOCOL_ERROR and logged
// as a PROTOCOL_ERROR, on a connection that keeps serving.
func TestTimeoutDigitsOnWire(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	for _, tt := range []struct {
		timeout string
		budget  int64 // ms, as ATTEMPT logs it
	}{
		{"12000000u", 12000},
		{"99999999m", 99999999},
	} {
		r := c.wait(c.send(pathGet, getMsg("a"), md{{"grpc-timeout", tt.timeout}, {MetaCall, tt.timeout}}), false, 2*time.Second)
		if r.status() != "0" {
			t.Errorf("grpc-timeout %s: grpc-status %q rst %v, want 0", tt.timeout, r.status(), r.rst)
		}
		var budgets []int64
		for _, e := range ts.events(t, "ATTEMPT") {
			if e.Text("call") == tt.timeout {
				n, _ := e.Int("budget")
				budgets = append(budgets, n)
			}
		}
		if len(budgets) != 1 || budgets[0] != tt.budget {
			t.Errorf("grpc-timeout %s: ATTEMPT budgets %v, want [%d]", tt.timeout, budgets, tt.budget)
		}
	}
	r := c.wait(c.send(pathGet, getMsg("a"), md{{"grpc-timeout", "123456789m"}}), false, 2*time.Second)
	if r.rst == nil || *r.rst != http2.ErrCodeProtocol {
		t.Errorf("9-digit grpc-timeout: RST_STREAM %v grpc-status %q, want PROTOCOL_ERROR", r.rst, r.status())
	}
	if n := len(ts.events(t, "PROTOCOL_ERROR")); n != 1 {
		t.Errorf("%d PROTOCOL_ERROR events, want 1 (the 9-digit grpc-timeout)", n)
	}
	if r := c.wait(c.send(pathGet, getMsg("a"), nil), false, 2*time.Second); r.status() != "0" {
		t.Errorf("after the refusal: grpc-status %q, want 0", r.status())
	}
}
