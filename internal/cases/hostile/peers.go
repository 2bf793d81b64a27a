package hostile

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/rawgrpc"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// politeAccount is the account the well-behaved gRPC client reads,
// which nobody debits.
const politeAccount = "acct-polite"

// politeGRPC tallies the gets of the well-behaved gRPC client: one
// connection of its own, a large window, one get at a time.
type politeGRPC struct {
	Calls, OK int
	bad       string // the first wrong result
}

// dialGRPC opens a gRPC connection to s, closed when the scenario ends.
func dialGRPC(t *scenario.T, s *scenario.Server, o rawgrpc.Options) *rawgrpc.Conn {
	ctx, cancel := context.WithTimeout(t.Ctx, scenario.IOTimeout)
	defer cancel()
	c, err := rawgrpc.DialOptions(ctx, s.Addr, o)
	if err != nil {
		t.Fatalf("gRPC dial %s: %v", s.Addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// politeConn returns the well-behaved gRPC client's connection, whose
// first get has succeeded.
func politeConn(t *scenario.T, s *scenario.Server) *rawgrpc.Conn {
	c := dialGRPC(t, s, rawgrpc.Options{})
	var p politeGRPC
	if p.gets(t, c, 1); p.OK != 1 {
		t.Fatalf("polite gRPC client before the attack: %s", p.bad)
	}
	return c
}

// gets makes n gets on c, one after the other.
func (p *politeGRPC) gets(t *scenario.T, c *rawgrpc.Conn, n int) {
	for range n {
		p.add(getOnce(t, c))
	}
}

// getOnce makes one get of politeAccount on c and returns how it ended.
func getOnce(t *scenario.T, c *rawgrpc.Conn) (rawgrpc.Result, error) {
	st, err := c.Open(rawgrpc.Request{Method: "Get", Timeout: "5S", Message: rawgrpc.GetRequest(politeAccount, 0, 0)})
	if err != nil {
		return rawgrpc.Result{}, err
	}
	ctx, cancel := context.WithTimeout(t.Ctx, scenario.IOTimeout)
	defer cancel()
	return st.Wait(ctx)
}

// add records one get's result, correct when OK with the untouched
// balance of politeAccount.
func (p *politeGRPC) add(r rawgrpc.Result, err error) {
	p.Calls++
	if err == nil {
		var rep rawgrpc.AccountReply
		if rep, err = r.Reply(); err == nil && rep.Account == politeAccount && rep.Balance == bank.DefaultBalance {
			p.OK++
			return
		}
		if err == nil {
			err = fmt.Errorf("account %q balance %d", rep.Account, rep.Balance)
		}
	}
	if p.bad == "" {
		p.bad = err.Error()
	}
}

// String renders the tally as correct/made, e.g. "20/20".
func (p *politeGRPC) String() string { return fmt.Sprintf("%d/%d", p.OK, p.Calls) }

// check records a failure unless at least one get was made and all were
// correct.
func (p *politeGRPC) check(t *scenario.T, when string) {
	t.Check(p.Calls > 0 && p.OK == p.Calls, "polite gRPC client %s: %d of %d gets correct; first wrong: %s", when, p.OK, p.Calls, p.bad)
}

// grpcConn returns the gRPC side's number for the connection whose
// remote address is remote, from its CONN_OPEN event.
func grpcConn(t *scenario.T, s *scenario.Server, remote string) int64 {
	e := t.AwaitEvent(s, "CONN_OPEN of "+remote, func(e serverapi.Event) bool {
		return e.Name == serverapi.EventConnOpen && e.Text(serverapi.KeyWire) == serverapi.WireGRPC && e.Text(serverapi.KeyRemote) == remote
	})
	n, _ := e.Int(serverapi.KeyConn)
	return n
}

// limitCounts sums, by the limit they name, the counts of the gRPC
// side's LIMIT events in evs, and counts the events. rpcbench's wire
// logs its own -max-conns refusals as LIMIT too, without wire=grpc.
func limitCounts(evs []serverapi.Event) (counts, events map[string]int64) {
	counts, events = map[string]int64{}, map[string]int64{}
	for _, e := range evs {
		if e.Name != serverapi.EventLimit || e.Text(serverapi.KeyWire) != serverapi.WireGRPC {
			continue
		}
		n, _ := e.Int(serverapi.KeyCount)
		counts[e.Text(serverapi.KeyLimit)] += n
		events[e.Text(serverapi.KeyLimit)]++
	}
	return counts, events
}

// connLogBytes measures the server log that one gRPC connection caused:
// the bytes (newlines included) and the number of the lines of its
// events, those with its conn number and wire=grpc. It reads the raw
// log, since what is measured is its size, and decodes each line as
// ReadEvents does, from this server's LISTEN event on.
func connLogBytes(t *scenario.T, s *scenario.Server, conn int64) (size, lines int64) {
	f, err := os.Open(s.LogPath)
	if err != nil {
		t.Fatalf("server log: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	started := false
	for sc.Scan() {
		evs, err := serverapi.ReadEvents(bytes.NewReader(sc.Bytes()))
		if err != nil || len(evs) != 1 {
			t.Fatalf("server log %s: %v", s.LogPath, err)
		}
		e := evs[0]
		if e.Name == serverapi.EventListen && e.Text(serverapi.KeyAddr) == s.Addr {
			started, size, lines = true, 0, 0
			continue
		}
		if n, ok := e.Int(serverapi.KeyConn); started && ok && n == conn && e.Text(serverapi.KeyWire) == serverapi.WireGRPC {
			size += int64(len(sc.Bytes()) + 1)
			lines++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("server log %s: %v", s.LogPath, err)
	}
	if !started {
		t.Fatalf("server log %s has no %s event for %s", s.LogPath, serverapi.EventListen, s.Addr)
	}
	return size, lines
}

// h2Peer is a hostile HTTP/2 client on raw frames: it writes what it
// likes through a buffered Framer, and a reader goroutine, when started,
// reads the server's frames until the connection ends, keeping the
// GOAWAY.
type h2Peer struct {
	nc *net.TCPConn
	bw *bufio.Writer
	fr *http2.Framer

	goAway chan http2.ErrCode // receives the GOAWAY's code, once
	ended  chan struct{}      // closed when the reader has returned
	endAt  time.Time          // when the reader saw the connection end
}

// dialH2 connects to s and sends the client preface and empty SETTINGS,
// flushed.
func dialH2(t *scenario.T, s *scenario.Server) *h2Peer {
	return dialH2Buffer(t, s, 0)
}

// dialH2Buffer is dialH2 with a receive buffer of rcvBuf bytes, set
// before connecting so that the window the connection advertises never
// exceeds it; 0 leaves the kernel's.
func dialH2Buffer(t *scenario.T, s *scenario.Server, rcvBuf int) *h2Peer {
	d := net.Dialer{Timeout: scenario.IOTimeout}
	if rcvBuf > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			if err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvBuf)
			}); err != nil {
				return err
			}
			return serr
		}
	}
	nc, err := d.DialContext(t.Ctx, "tcp", s.Addr)
	if err != nil {
		t.Fatalf("dial %s: %v", s.Addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	p := &h2Peer{nc: nc.(*net.TCPConn), goAway: make(chan http2.ErrCode, 1), ended: make(chan struct{})}
	p.bw = bufio.NewWriterSize(p.nc, 64<<10)
	p.fr = http2.NewFramer(p.bw, p.nc)
	p.bw.WriteString(http2.ClientPreface)
	if err := p.fr.WriteSettings(); err != nil {
		t.Fatalf("settings: %v", err)
	}
	if err := p.flush(); err != nil {
		t.Fatalf("preface: %v", err)
	}
	return p
}

// flush writes what is buffered, within IOTimeout.
func (p *h2Peer) flush() error {
	p.nc.SetWriteDeadline(time.Now().Add(scenario.IOTimeout))
	return p.bw.Flush()
}

// read starts the reader; a cleanup closes the connection and waits for
// it.
func (p *h2Peer) read(t *scenario.T) {
	go func() {
		defer close(p.ended)
		for {
			f, err := p.fr.ReadFrame()
			if err != nil {
				p.endAt = time.Now()
				return
			}
			if g, ok := f.(*http2.GoAwayFrame); ok {
				select {
				case p.goAway <- g.ErrCode:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { p.nc.Close(); <-p.ended })
}

// headerBlock encodes a request's header block for method, with an
// encoder of its own: every field a literal, so that the block decodes
// the same whatever the server's decoder holds.
func headerBlock(method string) []byte {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
		{Name: ":path", Value: "/rpcbench.bank.v1.Bank/" + method}, {Name: ":authority", Value: "rpcbench"},
		{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"},
	} {
		enc.WriteField(f)
	}
	return b.Bytes()
}
