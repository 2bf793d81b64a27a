package hostile

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/rawgrpc"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// Limits and timing of hostile_slowloris.
const (
	slowConns       = 8 // -max-conns, on each wire
	slowReadTimeout = 2 * time.Second
	// slowPace is the pause between two bytes of a trickler: far below
	// -read-timeout, so that no read waits that long, while what it
	// started is never finished in time.
	slowPace = 250 * time.Millisecond
	// slowMargin is how long after -read-timeout a trickler may still be
	// open, on a machine whose cores are both busy.
	slowMargin = 3 * time.Second
)

// trickler holds a connection open by sending what it started slowly.
type trickler struct {
	kind string
	nc   *net.TCPConn
	head []byte // sent at once
	slow []byte // sent a byte at a time
	// frame, when set, wraps each byte of slow in a frame of its own.
	frame  func(b []byte, last bool) []byte
	start  time.Time     // when the slow part began
	closed time.Duration // when the server closed it, from start; 0 if it did not
	stop   chan struct{} // closed when the reader returns
}

// hostileSlowloris fills -max-conns on both wires: the polite clients'
// connections and slowConns-1 tricklers on each, which start a frame
// (rpcbench's wire) or a preface, a frame or a header block (gRPC) and
// send it a byte every 250 ms. While they hold, one more connection on
// each wire is turned away and the polite clients are served; every
// trickler is then closed by -read-timeout, no sooner, logged
// READ_TIMEOUT and counted read_timeouts on its wire; and a new client
// is served on each.
func hostileSlowloris(t *scenario.T) {
	s := t.StartServerLimits(scenario.ServerOpts{GRPC: true}, scenario.Limits{MaxConns: slowConns, ReadTimeout: slowReadTimeout})
	c := t.PoliteClient(s)
	polite := politeConn(t, s)
	w := t.WatchGRPC(s)

	var ts []*trickler
	get := t.RequestBytes(1, bank.MethodGet, "account=acct-slowloris")
	for range slowConns - 1 {
		ts = append(ts, &trickler{kind: "rpcbench", slow: get})
	}
	settings := new(bytes.Buffer)
	http2.NewFramer(settings, nil).WriteSettings()
	ping := new(bytes.Buffer)
	http2.NewFramer(ping, nil).WritePing(false, [8]byte{})
	// A header block whose last field's value comes a byte per
	// CONTINUATION frame: each frame is whole at once, the block never.
	block := slowBlock()
	headers := new(bytes.Buffer)
	http2.NewFramer(headers, nil).WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:len(block)-slowBlockRest]})
	for i := range slowConns - 1 {
		switch i % 3 {
		case 0:
			ts = append(ts, &trickler{kind: "grpcPreface", head: []byte(http2.ClientPreface[:1]), slow: []byte(http2.ClientPreface[1:])})
		case 1:
			ts = append(ts, &trickler{kind: "grpcFrame", head: append([]byte(http2.ClientPreface), settings.Bytes()...), slow: ping.Bytes()})
		case 2:
			ts = append(ts, &trickler{kind: "grpcHeaderBlock", head: append(append([]byte(http2.ClientPreface), settings.Bytes()...), headers.Bytes()...),
				slow: block[len(block)-slowBlockRest:], frame: continuation})
		}
	}
	// No control call is made while the tricklers hold, since its
	// connection would be turned away: the server's log is read instead.
	// The control connections of the baseline must be gone first.
	if !scenario.WaitFor(scenario.SettleTimeout, func() bool { return openRPCConns(t.Events(s)) == 1 }) {
		t.Fatalf("the server kept control connections open: %d open on rpcbench's wire, want the polite client's alone", openRPCConns(t.Events(s)))
	}
	var wg sync.WaitGroup
	for _, tr := range ts {
		tr.nc = t.DialRaw(s.Addr)
		tr.stop = make(chan struct{})
		if err := scenario.WriteTimed(tr.nc, tr.head); err != nil {
			t.Fatalf("%s trickler: %v", tr.kind, err)
		}
		tr.start = time.Now()
		wg.Go(tr.read)
		wg.Go(tr.trickle)
	}
	t.Cleanup(func() {
		for _, tr := range ts {
			tr.nc.Close()
		}
		wg.Wait()
	})
	for _, tr := range ts {
		remote := tr.nc.LocalAddr().String()
		t.AwaitEvent(s, "the "+tr.kind+" trickler's CONN_OPEN", func(e serverapi.Event) bool {
			return e.Name == serverapi.EventConnOpen && e.Text(serverapi.KeyRemote) == remote
		})
	}
	// The turned-away connections are tried first, while the tricklers
	// are certainly open.
	rpcTurnedAway := turnedAway(t, s.Addr)
	extra, grpcServed := servedGRPC(t, s)
	if grpcServed {
		extra.Close()
	}
	var during, after scenario.Polite
	var duringGRPC, afterGRPC politeGRPC
	during.Gets(t, c, scenario.PoliteDuring)
	duringGRPC.gets(t, polite, scenario.PoliteDuring)
	w.SampleMemoryDuring()

	wg.Wait()
	w.Settle()
	rpcCtr, grpcCtr := t.Counters(s), t.GRPCCounters(s)
	evs := t.Events(s)
	fresh := t.Client(s.Addr, client.DefaultConfig())
	after.Gets(t, fresh, scenario.PoliteAfter)
	afterGRPC.gets(t, dialGRPC(t, s, rawgrpc.Options{}), scenario.PoliteAfter)

	t.Field("maxConns", slowConns)
	t.Field("readTimeout", slowReadTimeout)
	t.Field("pace", scenario.Millis(slowPace))
	byKind := map[string]int{}
	var first, last time.Duration
	notClosed := 0
	for _, tr := range ts {
		byKind[tr.kind]++
		if tr.closed == 0 {
			notClosed++
			continue
		}
		if first == 0 || tr.closed < first {
			first = tr.closed
		}
		last = max(last, tr.closed)
	}
	kinds := make([]string, 0, len(byKind))
	for k, n := range byKind {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	slices.Sort(kinds)
	t.Field("tricklers", strings.Join(kinds, " "))
	scenario.Expectf(t, "turnedAwayWhileFull", fmt.Sprintf("rpcbench=%v grpc=%v", rpcTurnedAway, !grpcServed), "rpcbench=true grpc=true", "a connection past -max-conns on each wire")
	scenario.Expectf(t, "tricklersOpenAfterTimeout", notClosed, 0, "tricklers the server left open %v past -read-timeout", slowMargin)
	if notClosed < len(ts) {
		scenario.Between(t, "closedAfter", first, slowReadTimeout, -1)
		scenario.Within(t, "lastClosedAfter", last, slowReadTimeout+slowMargin)
	}
	rpcTimeouts := scenario.CountEvents(evs, func(e serverapi.Event) bool {
		return e.Name == serverapi.EventReadTimeout && e.Text(serverapi.KeyWire) == ""
	})
	grpcTimeouts := scenario.CountEvents(evs, func(e serverapi.Event) bool {
		return e.Name == serverapi.EventReadTimeout && e.Text(serverapi.KeyWire) == serverapi.WireGRPC
	})
	scenario.Expect(t, "readTimeouts", fmt.Sprintf("rpcbench=%d grpc=%d", rpcCtr.ReadTimeouts, grpcCtr.ReadTimeouts),
		fmt.Sprintf("rpcbench=%d grpc=%d", slowConns-1, slowConns-1))
	scenario.Expect(t, "readTimeoutEvents", fmt.Sprintf("rpcbench=%d grpc=%d", rpcTimeouts, grpcTimeouts),
		fmt.Sprintf("rpcbench=%d grpc=%d", slowConns-1, slowConns-1))
	scenario.Expect(t, "connsRejected", fmt.Sprintf("rpcbench=%d grpc=%d", rpcCtr.ConnsRejected, grpcCtr.ConnsRejected), "rpcbench=1 grpc=1")
	t.Field("politeDuring", fmt.Sprintf("rpcbench=%v grpc=%v", &during, &duringGRPC))
	t.Field("politeAfterFresh", fmt.Sprintf("rpcbench=%v grpc=%v", &after, &afterGRPC))
	w.Report(scenario.RSSLimitTightKB)
	during.Check(t, "while the tricklers held every other connection")
	duringGRPC.check(t, "while the tricklers held every other connection")
	after.Check(t, "on a new connection once the tricklers were closed")
	afterGRPC.check(t, "on a new connection once the tricklers were closed")
}

// trickle sends tr's slow part a byte (or a frame) every slowPace until
// the server closes the connection or the slow part is sent, then waits
// for the reader.
func (tr *trickler) trickle() {
	tick := time.NewTicker(slowPace)
	defer tick.Stop()
	for i := range tr.slow {
		select {
		case <-tr.stop:
			return
		case <-tick.C:
		}
		b := tr.slow[i : i+1]
		if tr.frame != nil {
			b = tr.frame(b, i == len(tr.slow)-1)
		}
		err := scenario.WriteTimed(tr.nc, b)
		if err != nil {
			return
		}
	}
	<-tr.stop
}

// read discards what the server sends until it closes the connection,
// recording when, or until -read-timeout and slowMargin have passed.
func (tr *trickler) read() {
	defer close(tr.stop)
	defer tr.nc.Close() // its slot is free for the control calls after
	tr.nc.SetReadDeadline(tr.start.Add(slowReadTimeout + slowMargin))
	_, err := io.Copy(io.Discard, tr.nc)
	if err == nil || scenario.IsReset(err) {
		tr.closed = time.Since(tr.start)
	}
}

// slowBlockRest is how many bytes of slowBlock the header block
// trickler sends a byte at a time.
const slowBlockRest = 64

// slowBlock is a get's header block and a last field whose value is
// long enough to trickle for far longer than -read-timeout.
func slowBlock() []byte {
	var b bytes.Buffer
	b.Write(headerBlock("Get"))
	hpack.NewEncoder(&b).WriteField(hpack.HeaderField{Name: "x-slowloris", Value: strings.Repeat("z", 2*slowBlockRest), Sensitive: true})
	return b.Bytes()
}

// continuation frames b as a CONTINUATION on stream 1, ending the
// header block when last.
func continuation(b []byte, last bool) []byte {
	var out bytes.Buffer
	http2.NewFramer(&out, nil).WriteContinuation(1, last, b)
	return out.Bytes()
}

// turnedAway opens a connection on rpcbench's wire and makes a get on
// it; it reports true when the server closed it unanswered, false when
// the get was answered.
func turnedAway(t *scenario.T, addr string) bool {
	rc := t.DialFrames(addr)
	defer rc.NC.Close()
	if err := scenario.WriteTimed(rc.NC, t.RequestBytes(1, bank.MethodGet, "account=acct-slowloris")); err != nil {
		return scenario.IsReset(err)
	}
	f, err := rc.Read()
	if err == nil && f.Status == proto.StatusOK {
		return false
	}
	return err == io.EOF || scenario.IsReset(err)
}

// openRPCConns counts the connections open on rpcbench's wire by the
// server's log: CONN_OPEN events less CONN_CLOSED ones, of events
// without wire.
func openRPCConns(evs []serverapi.Event) int {
	n := 0
	for _, e := range evs {
		switch {
		case e.Text(serverapi.KeyWire) != "":
		case e.Name == serverapi.EventConnOpen:
			n++
		case e.Name == serverapi.EventConnClosed:
			n--
		}
	}
	return n
}
