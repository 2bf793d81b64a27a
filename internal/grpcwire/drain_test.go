package grpcwire

import (
	"context"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// Drain answers the call in flight, tells the client with GOAWAY
// (NO_ERROR) which streams it takes, ignores one opened above them,
// closes the connection with FIN once the call is answered, and returns
// nil: nothing is cut, nothing above the GOAWAY executes. (rpcserver's
// SIGTERM once drained the rpc side alone and cut its gRPC calls.)
func TestDrainAnswersInFlight(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	slow := c.send(pathDebit, debitSleepMsg("d", 10, 300), md{{"grpc-timeout", "5S"}})
	ts.await(t, "ATTEMPT", 2*time.Second)
	drained := make(chan error, 1)
	go func() { drained <- ts.Drain(context.Background()) }()
	r := c.wait(slow, false, 5*time.Second)
	if r.status() != "0" {
		t.Fatalf("the call in flight at the drain got headers %v trailers %v rst %v (%v), want grpc-status 0", r.headers, r.trailers, r.rst, r.connErr)
	}
	goaway := r.goaway // came before the answer, or after
	late := c.send(pathDebit, debitMsg("e", 10), md{{"grpc-timeout", "5S"}})
	r = c.wait(late, true, 5*time.Second)
	if goaway == nil {
		goaway = r.goaway
	}
	if goaway == nil || goaway.ErrCode != http2.ErrCodeNo || goaway.LastStreamID != slow {
		t.Errorf("GOAWAY %+v, want NO_ERROR naming stream %d", goaway, slow)
	}
	if r.closedBy() != "eof" || r.ended {
		t.Errorf("after the drain: stream %d ended=%v, connection closed by %q; want it unanswered and a FIN", late, r.ended, r.closedBy())
	}
	select {
	case err := <-drained:
		if err != nil {
			t.Errorf("Drain: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Drain did not return once its connection closed")
	}
	execs := ts.events(t, "EXEC")
	if len(execs) != 1 || execs[0].Text("account") != "d" {
		t.Errorf("EXEC events %v, want the debit of d alone", execs)
	}
}

// A drain whose context ends first closes what is still open and says
// so.
func TestDrainTimesOut(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	c.send(pathDebit, debitSleepMsg("d", 10, 2000), md{{"grpc-timeout", "5S"}})
	ts.await(t, "ATTEMPT", 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := ts.Drain(ctx); err == nil {
		t.Error("Drain returned nil with a call still in flight at its deadline")
	}
}
