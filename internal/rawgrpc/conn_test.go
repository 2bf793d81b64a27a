package rawgrpc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/grpcwire"
)

// serve starts rpcserver's gRPC transport on a loopback port with an
// in-memory bank, closed when the test ends.
func serve(t *testing.T) string {
	t.Helper()
	lg := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := grpcwire.DefaultConfig()
	cfg.Log = lg
	s, err := grpcwire.New(cfg, bank.New(bank.NewMemory(), lg))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func wait(t *testing.T, st *Stream) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := st.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDebitAnswered(t *testing.T) {
	c := dial(t, serve(t))
	st, err := c.Open(Request{Method: "Debit", Call: "c1", Timeout: "5S", Message: DebitRequest("acct-A", 10, 0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	r := wait(t, st)
	rep, err := r.Reply()
	if err != nil {
		t.Fatalf("%v (%+v)", err, r)
	}
	if rep.Account != "acct-A" || rep.Exec != 1 || rep.BudgetMs != 5000 {
		t.Fatalf("got %+v, want acct-A executed once with a 5000ms budget", rep)
	}
}

// TestExpiredAnswered: a grpc-timeout of 0n is past on arrival, and the
// client reads the server's DEADLINE_EXCEEDED.
func TestExpiredAnswered(t *testing.T) {
	c := dial(t, serve(t))
	st, err := c.Open(Request{Method: "Debit", Timeout: "0n", Message: DebitRequest("acct-A", 10, 0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if r := wait(t, st); r.Outcome() != "DEADLINE_EXCEEDED" {
		t.Fatalf("got %s, want DEADLINE_EXCEEDED", r.Outcome())
	}
}

// TestResetEnds: a stream the client resets ends at once, and the
// connection serves the next call.
func TestResetEnds(t *testing.T) {
	c := dial(t, serve(t))
	st, err := c.Open(Request{Method: "Debit", Message: DebitRequest("acct-A", 10, 2000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Reset(http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	<-st.Done()
	next, err := c.Open(Request{Method: "Get", Message: GetRequest("acct-A", 0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if r := wait(t, next); r.Outcome() != "OK" {
		t.Fatalf("got %s, want OK", r.Outcome())
	}
}

// TestBadFrameClosesConn: DATA on stream 0 is a connection error: the
// server sends GOAWAY and the open stream ends with the connection.
func TestBadFrameClosesConn(t *testing.T) {
	c := dial(t, serve(t))
	st, err := c.Open(Request{Method: "Get", Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteFrame(http2.FrameData, 0, 0, []byte("x")); err != nil {
		t.Fatal(err)
	}
	r := wait(t, st)
	if !r.ConnClosed || c.GoAway() == nil || c.GoAway().Code != http2.ErrCodeProtocol {
		t.Fatalf("got %+v with GOAWAY %+v, want the connection closed after GOAWAY PROTOCOL_ERROR", r, c.GoAway())
	}
}

// TestZeroWindowHeaders: a client that grants no window gets an
// answer's HEADERS, so Headers is closed, and never its DATA, so the
// stream does not end: with a window, the answer's DATA and trailers
// follow within a millisecond or so, far less than the wait here.
func TestZeroWindowHeaders(t *testing.T) {
	c, err := DialOptions(context.Background(), serve(t), Options{ZeroWindow: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	st, err := c.Open(Request{Method: "Echo", Message: EchoRequest([]byte("held"))})
	if err != nil {
		t.Fatal(err)
	}
	<-st.Headers()
	select {
	case <-st.Done():
		r, _ := st.Wait(context.Background())
		t.Fatalf("the stream ended %s, want its DATA held back by the zero window", r.Outcome())
	case <-time.After(200 * time.Millisecond):
	}
}

func TestSplitMessages(t *testing.T) {
	for _, tc := range []struct {
		in  []byte
		n   int
		bad bool
	}{
		{nil, 0, false},
		{[]byte{0, 0, 0, 0, 1, 'x'}, 1, false},
		{[]byte{0, 0, 0, 0, 2, 'x'}, 0, true},
		{[]byte{1, 0, 0, 0, 0}, 0, true},
		{[]byte{0, 0, 0}, 0, true},
	} {
		msgs, bad := splitMessages(tc.in)
		if len(msgs) != tc.n || (bad != "") != tc.bad {
			t.Errorf("splitMessages(%v) = %d messages, %q; want %d, bad %v", tc.in, len(msgs), bad, tc.n, tc.bad)
		}
	}
}

// TestSendAfterConnClosed: a write to a connection the reader has closed
// (the server ended it) fails with ErrClosed, as a stream waiting on it
// does, not with the socket's "use of closed network connection".
func TestSendAfterConnClosed(t *testing.T) {
	c := dial(t, serve(t))
	st, err := c.Open(Request{Method: "Get", Call: "c1", Timeout: "5S", Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	// As read does once the server has closed the connection.
	c.nc.Close()
	if err := st.Send(GetRequest("acct-A", 0, 0), true); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after the connection closed: %v, want ErrClosed", err)
	}
}
