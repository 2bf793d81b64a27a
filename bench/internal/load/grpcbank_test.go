package load

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestGRPCBankNote(t *testing.T) {
	rows := []Row{
		{System: KeyGRPCBankFault, Key: KeyGRPCBankFault, G: 8, CallsPerSec: 30000, ServerCPUPer100k: 3, ServerCPUOK: true},
		{System: KeyGRPCBankGo, Key: KeyGRPCBankGo, G: 8, CallsPerSec: 20000, ServerCPUPer100k: 4, ServerCPUOK: true},
		{System: KeyGRPCBankFault, Key: KeyGRPCBankFault, G: 64, CallsPerSec: 10000, ServerCPUPer100k: 2, ServerCPUOK: false},
		{System: KeyGRPCBankGo, Key: KeyGRPCBankGo, G: 64, CallsPerSec: 40000, ServerCPUPer100k: 1, ServerCPUOK: true},
		{System: KeyGRPCBankFault, Key: KeyGRPCBankFault, G: 512, CallsPerSec: 1}, // no peer row at this G
	}
	want := "- grpc-bank-rpcserver / grpc-bank-grpc-go at G=8: calls/s 1.50, server CPU per call 0.75.\n" +
		"- grpc-bank-rpcserver / grpc-bank-grpc-go at G=64: calls/s 0.25, server CPU per call n/a.\n"
	if got := grpcBankNote(rows); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestRunGRPCBank runs the two grpc-bank rows for real, grpc-go's
// client against rpcserver -grpc and against benchpeer -kind grpc-bank,
// and checks that every call got its own account's answer and that the
// table gives their ratio at each G. It asserts nothing about speed.
func TestRunGRPCBank(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and spawns the servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := DefaultOptions()
	o.Systems = []string{GroupGRPCBank}
	o.N, o.Warmup, o.Rounds, o.G = 300, 50, 1, []int{8, 64}
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.Rows {
		got = append(got, r.System)
		if r.TotalCalls != int64(o.N) || r.NonOK != 0 {
			t.Errorf("%s G=%d: got %d non-OK of %d calls (first: %s), want 0 of %d", r.System, r.G, r.NonOK, r.TotalCalls, r.FirstError, o.N)
		}
		if r.CallsPerSec <= 0 || r.MBPerSec <= 0 {
			t.Errorf("%s G=%d: got calls/s %v, MB/s %v, want both positive", r.System, r.G, r.CallsPerSec, r.MBPerSec)
		}
	}
	want := "grpc-bank-rpcserver grpc-bank-grpc-go grpc-bank-rpcserver grpc-bank-grpc-go"
	if g := strings.Join(got, " "); g != want {
		t.Fatalf("rows: got %q, want %q", g, want)
	}
	var b bytes.Buffer
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"8", "64"} {
		if line := "- grpc-bank-rpcserver / grpc-bank-grpc-go at G=" + g + ": calls/s "; !strings.Contains(b.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, b.String())
		}
	}
}
