package server

import (
	"bytes"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/transport"
)

// getHandler answers "get" like the bank does an account never debited,
// without allocating, so that BenchmarkServeGet measures the transport
// alone. (An internal test cannot import bank, which imports server; the
// bank's own share is BenchmarkExecuteGet in internal/bank.)
type getHandler struct{}

func (getHandler) Methods() []string                { return []string{"get"} }
func (getHandler) MayBlock(*transport.Request) bool { return false }
func (getHandler) Counters(func(string, int64))     {}

func (getHandler) Execute(r *transport.Request, dst []byte) (proto.Status, []byte) {
	account, ok := bytes.CutPrefix(r.Payload, []byte("account="))
	if !ok {
		return proto.StatusInvalidArgument, append(dst, "account is required"...)
	}
	dst = append(dst, "account="...)
	dst = append(dst, account...)
	dst = append(dst, " balance=1000 budget="...)
	dst = strconv.AppendUint(dst, uint64(r.BudgetMs), 10)
	return proto.StatusOK, append(dst, " exec=0 replayed=false"...)
}

// serveGet sets up a connection whose reader runs gets itself, and
// returns one request's worth of that reader's work: executing a get and
// encoding its answer into the output queue, which it then empties as a
// flush would.
func serveGet(tb testing.TB) func() {
	tb.Helper()
	s, err := New(DefaultConfig(), getHandler{})
	if err != nil {
		tb.Fatal(err)
	}
	nc, peer := net.Pipe()
	tb.Cleanup(func() {
		peer.Close()
		nc.Close()
		s.Close()
	})
	c := newConn(s, nc)
	j := job{c: c, f: proto.Frame{Type: proto.TypeRequest, ID: 1, BudgetMs: 1 << 30, Method: "get", Payload: []byte("account=acct-17")}, arrival: time.Now()}
	return func() {
		c.rd.req = request(&j, s.done)
		rf, lent, ok := s.serve(&j, &c.rd.req, &c.rd.scratch)
		if !ok {
			tb.Fatal("serve sent the answer itself; want it returned to the reader")
		}
		c.rd.held = false
		c.hold(&rf, lent, nil)
		if !c.rd.held {
			tb.Fatal("the answer was not queued")
		}
		c.mu.Lock()
		c.out, c.outBytes, c.outFrames = c.out[:0], 0, 0
		c.mu.Unlock()
	}
}

// BenchmarkServeGet reports the transport's own allocations per request:
// running a get the handler cannot block on and encoding its answer into
// the connection's output queue, as a reader does for a request it runs
// itself (dispatch's fast path). Decoding is measured by
// BenchmarkDecoder, the bank's execution by BenchmarkExecuteGet.
func BenchmarkServeGet(b *testing.B) {
	serve := serveGet(b)
	b.ReportAllocs()
	for b.Loop() {
		serve()
	}
}

// TestServeGetAllocs holds BenchmarkServeGet's point: once its buffers
// have grown, the reader's execute-and-encode path allocates nothing.
func TestServeGetAllocs(t *testing.T) {
	serve := serveGet(t)
	if n := testing.AllocsPerRun(1000, serve); n != 0 {
		t.Errorf("serving a get allocates %v times per request, want 0", n)
	}
}
