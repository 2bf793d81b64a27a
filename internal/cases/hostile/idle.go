package hostile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"golang.org/x/sys/unix"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/rawgrpc"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// Loads and timing of hostile_idle_keepalive.
const (
	idleRPC  = 1500 // idle connections on rpcbench's wire
	idleGRPC = 200  // and on the gRPC side
	// idleKeepAlive is -keepalive, and idleWriteTimeout -write-timeout,
	// below the keepalive interval: before the fix it was each
	// connection's TCP_USER_TIMEOUT, and a single lost probe made the
	// kernel drop the connection.
	idleKeepAlive    = time.Second
	idleWriteTimeout = 500 * time.Millisecond
	// idleHold is how long the connections stay idle: six keepalive
	// intervals.
	idleHold = 6 * idleKeepAlive
	// idleDeaf connections on each wire go deaf idleDeafAt into the hold,
	// by then idle long enough to be probed every interval, and for
	// idleDeafFor: they lose every segment they receive, so that one
	// probe, perhaps two, goes unanswered. Probes come an interval apart
	// or a little more (timers fire late, never early), so the deafness
	// is longer than one interval, and shorter than two by a margin for
	// busy cores, as it must be for the third probe to be answered.
	idleDeaf    = 8
	idleDeafAt  = 2 * idleKeepAlive
	idleDeafFor = 13 * idleKeepAlive / 10
	// idleRSSLimitKB bounds the server's memory growth with the idle
	// connections open and then each answering a get: a reader and a
	// writer goroutine and their buffers each. Runs grew it by 32 KiB a
	// connection on average (2300 connections: 75 MiB).
	idleRSSLimitKB = 96 << 10
)

// hostileIdleKeepalive opens 1500 connections on rpcbench's wire and 200
// on the gRPC side (preface and SETTINGS sent) and leaves them idle for
// six keepalive intervals, with -keepalive 1s and a -write-timeout below
// it. Eight on each wire lose the server's probes for a while, as if
// they were lost on the way: before the fix a single lost probe made the
// kernel abort the connection (transport.PlanTCP). Healthy idle
// connections, those included, must all be kept, by the server and by
// the kernel's keepalive, and each then still answers a get; a polite
// client is served meanwhile and after.
func hostileIdleKeepalive(t *scenario.T) {
	s := t.StartServerLimits(scenario.ServerOpts{GRPC: true, WriteTimeout: idleWriteTimeout},
		scenario.Limits{MaxConns: 2 * idleRPC, KeepAlive: idleKeepAlive})
	c := t.PoliteClient(s)
	polite := politeConn(t, s)
	w := t.WatchGRPC(s)

	rpcs := make([]*scenario.RawConn, idleRPC)
	for i := range rpcs {
		// Silent: the server takes it for rpcbench's wire after 1 s
		// without a gRPC preface.
		rpcs[i] = t.DialFrames(s.Addr)
	}
	grpcs := make([]*rawgrpc.Conn, idleGRPC-idleDeaf)
	for i := range grpcs {
		grpcs[i] = dialGRPC(t, s, rawgrpc.Options{})
	}
	// rawgrpc keeps its socket to itself: the deaf gRPC connections are
	// raw HTTP/2 peers.
	deafGRPC := make([]*h2Peer, idleDeaf)
	deaf := make([]*net.TCPConn, 0, 2*idleDeaf)
	for i := range deafGRPC {
		deafGRPC[i] = dialH2(t, s)
		deafGRPC[i].fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		deaf = append(deaf, deafGRPC[i].nc, rpcs[i].NC)
	}
	t.AwaitTakeIn(s, "idle connections open on both wires", func(scenario.Counters) bool {
		return t.GRPCCounters(s).ConnsOpen+t.Counters(s).ConnsOpen >= w.Before.ConnsOpen+idleRPC+idleGRPC
	})
	start := time.Now()
	deafSpan := make(chan deafness, 1)
	go func() { deafSpan <- deafen(deaf, start.Add(idleDeafAt), idleDeafFor) }()
	var during, after scenario.Polite
	var duringGRPC, afterGRPC politeGRPC
	for time.Since(start) < idleHold {
		during.Gets(t, c, 1)
		duringGRPC.gets(t, polite, 1)
		time.Sleep(idleKeepAlive / 2) // paces the polite gets through the hold; nothing waits on it
	}
	held := time.Since(start)
	d := <-deafSpan
	idle := map[string]bool{}
	for _, rc := range rpcs {
		idle[rc.Local()] = true
	}
	for _, g := range grpcs {
		idle[g.LocalAddr()] = true
	}
	for _, p := range deafGRPC {
		idle[p.nc.LocalAddr().String()] = true
	}
	closedDuring := scenario.CountEvents(t.Events(s), func(e serverapi.Event) bool {
		return e.Name == serverapi.EventConnClosed && idle[e.Text(serverapi.KeyRemote)]
	})
	rpcCtr, grpcCtr := t.Counters(s), t.GRPCCounters(s)
	w.SampleDuring()

	rpcServed, grpcServed := 0, 0
	rpcOK := make([]bool, len(rpcs))
	var firstBad string
	for i, rc := range rpcs {
		if err := idleGet(t, rc, uint64(i+1)); err == nil {
			rpcServed++
			rpcOK[i] = true
		} else if firstBad == "" {
			firstBad = fmt.Sprintf("rpcbench connection %s: %v", rc.Local(), err)
		}
	}
	for _, g := range grpcs {
		var p politeGRPC
		if p.add(getOnce(t, g)); p.OK == 1 {
			grpcServed++
		} else if firstBad == "" {
			firstBad = fmt.Sprintf("gRPC connection %s: %s", g.LocalAddr(), p.bad)
		}
	}
	deafServed := 0
	for i, p := range deafGRPC {
		if err := h2Get(p, 1); err == nil {
			grpcServed++
			deafServed++
		} else if firstBad == "" {
			firstBad = fmt.Sprintf("deaf gRPC connection %s: %v", p.nc.LocalAddr(), err)
		}
		if rpcOK[i] {
			deafServed++
		}
	}
	for _, rc := range rpcs {
		rc.NC.Close()
	}
	for _, g := range grpcs {
		g.Close()
	}
	for _, p := range deafGRPC {
		p.nc.Close()
	}
	w.Settle()
	after.Gets(t, c, scenario.PoliteAfter)
	afterGRPC.gets(t, polite, scenario.PoliteAfter)

	t.Field("idleConns", fmt.Sprintf("rpcbench=%d grpc=%d", idleRPC, idleGRPC))
	t.Field("keepalive", idleKeepAlive)
	t.Field("writeTimeout", idleWriteTimeout)
	scenario.Between(t, "held", held, idleHold, -1)
	t.Check(d.err == nil, "socket filters: %v", d.err)
	// Each deaf connection lost at least one probe, and at most two.
	scenario.Between(t, "deafShortest", d.shortest, idleDeafFor, -1)
	scenario.Between(t, "deafLongest", d.longest, -1, 2*idleKeepAlive)
	scenario.Expectf(t, "closedWhileIdle", closedDuring, 0, "%s events of idle connections before they were used again", serverapi.EventConnClosed)
	// Control connections may be among those open.
	t.Volatile("openAfterHold", fmt.Sprintf("rpcbench=%d grpc=%d", rpcCtr.ConnsOpen, grpcCtr.ConnsOpen))
	scenario.Expectf(t, "servedAfterHold", fmt.Sprintf("rpcbench=%d grpc=%d", rpcServed, grpcServed),
		fmt.Sprintf("rpcbench=%d grpc=%d", idleRPC, idleGRPC), "first failure: %s", firstBad)
	scenario.Expectf(t, "deafServedAfterHold", deafServed, 2*idleDeaf, "of the connections deaf for %v, %d on each wire", idleDeafFor, idleDeaf)
	t.Field("politeDuring", fmt.Sprintf("rpcbench=%v grpc=%v", &during, &duringGRPC))
	t.Field("politeAfter", fmt.Sprintf("rpcbench=%v grpc=%v", &after, &afterGRPC))
	w.Report(idleRSSLimitKB)
	during.Check(t, "while the idle connections were open")
	duringGRPC.check(t, "while the idle connections were open")
	after.Check(t, "after the idle connections closed")
	afterGRPC.check(t, "after the idle connections closed")
}

// idleGet makes a get with the given ID on an idle rpcbench connection.
func idleGet(t *scenario.T, rc *scenario.RawConn, id uint64) error {
	if err := scenario.WriteTimed(rc.NC, t.RequestBytes(id, bank.MethodGet, "account=acct-idle")); err != nil {
		return err
	}
	f, err := rc.Read()
	if err != nil {
		return err
	}
	if f.ID != id || f.Status != proto.StatusOK {
		return fmt.Errorf("answered %d %v %q", f.ID, f.Status, f.Payload)
	}
	return nil
}

// deafness is what deafen did: the shortest and longest time a
// connection was deaf, and the first error of its socket filters.
type deafness struct {
	shortest, longest time.Duration
	err               error
}

// deafen makes conns deaf at at, for d: a socket filter attached to each
// drops every segment it receives before TCP sees it, so that it neither
// sees nor answers the server's keepalive probes meanwhile; then the
// filters are detached.
func deafen(conns []*net.TCPConn, at time.Time, d time.Duration) deafness {
	var r deafness
	time.Sleep(time.Until(at)) // the deafness's place in the hold; nothing to wait on
	on := make([]time.Time, len(conns))
	for i, c := range conns {
		r.err = errors.Join(r.err, setDeaf(c, true))
		on[i] = time.Now()
	}
	time.Sleep(time.Until(on[len(on)-1].Add(d))) // the deafness itself
	r.shortest = time.Duration(math.MaxInt64)
	for i, c := range conns {
		r.err = errors.Join(r.err, setDeaf(c, false))
		span := time.Since(on[i])
		r.shortest, r.longest = min(r.shortest, span), max(r.longest, span)
	}
	return r
}

// setDeaf attaches to c, or detaches, a socket filter that drops every
// segment c receives: one BPF instruction, return 0 (keep no bytes).
func setDeaf(c *net.TCPConn, on bool) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		if !on {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DETACH_FILTER, 0)
			return
		}
		drop := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 0}}
		serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: 1, Filter: &drop[0]})
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("socket filter on=%v for %s: %w", on, c.LocalAddr(), err)
	}
	return nil
}

// h2Get makes a get of politeAccount on stream id of p, whose frames
// nobody else reads, and waits for its trailers: nil when they say OK.
func h2Get(p *h2Peer, id uint32) error {
	msg := rawgrpc.GetRequest(politeAccount, 0, 0)
	body := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(body[1:], uint32(len(msg)))
	p.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: headerBlock("Get"), EndHeaders: true})
	p.fr.WriteData(id, true, append(body, msg...))
	if err := p.flush(); err != nil {
		return err
	}
	p.nc.SetReadDeadline(time.Now().Add(scenario.IOTimeout))
	for {
		f, err := p.fr.ReadFrame()
		if err != nil {
			return err
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if f.StreamID != id || !f.StreamEnded() {
				continue
			}
			for _, h := range f.RegularFields() {
				if h.Name == "grpc-status" && h.Value == "0" {
					return nil
				}
			}
			return fmt.Errorf("trailers %v", f.Fields)
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				return fmt.Errorf("RST_STREAM(%v)", f.ErrCode)
			}
		case *http2.GoAwayFrame:
			return fmt.Errorf("GOAWAY(%v)", f.ErrCode)
		}
	}
}
