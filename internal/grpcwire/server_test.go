package grpcwire

import (
	"testing"
	"time"
)

func TestDebitAnswersAndLogsExec(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	id := c.send(pathDebit, debitMsg("a", 10), md{{"grpc-timeout", "2S"}, {MetaCall, "call-1"}})
	r := c.wait(id, false, 2*time.Second)
	if r.trailersOnly || r.status() != "0" || r.header(":status") != "200" || r.header("content-type") != "application/grpc" {
		t.Fatalf("got headers %v trailers %v, want HEADERS, DATA, trailers grpc-status 0", r.headers, r.trailers)
	}
	if got, want := replyText(t, r.data), "account=a balance=990 exec=1 budget_ms=2000"; got != want {
		t.Errorf("reply %q, want %q", got, want)
	}
	execs := ts.events(t, "EXEC")
	if len(execs) != 1 {
		t.Fatalf("got %d EXEC events, want 1", len(execs))
	}
	e := execs[0]
	if e.Text("call") != "call-1" || e.Text("wire") != "grpc" || e.Text("grpc_timeout") != "2S" || e.Text("prev") != "-" {
		t.Errorf("EXEC %v, want call=call-1 wire=grpc grpc_timeout=2S prev=-", e)
	}
	if n, _ := e.Int("attempt"); n != 1 {
		t.Errorf("EXEC attempt=%d, want 1", n)
	}
	if n, _ := e.Int("budget"); n != 2000 {
		t.Errorf("EXEC budget=%d, want 2000", n)
	}
}
