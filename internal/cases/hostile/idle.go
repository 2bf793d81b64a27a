package hostile

import (
	"fmt"
	"time"

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
	// which rpcserver also makes each connection's TCP_USER_TIMEOUT: below
	// the keepalive interval, where the kernel dropped idle connections
	// between two probes before the fix.
	idleKeepAlive    = time.Second
	idleWriteTimeout = 500 * time.Millisecond
	// idleHold is how long the connections stay idle: six keepalive
	// intervals.
	idleHold = 6 * idleKeepAlive
	// idleRSSLimitKB bounds the server's memory growth with the idle
	// connections open and then each answering a get: a reader and a
	// writer goroutine and their buffers each. Runs grew it by 32 KiB a
	// connection on average (2300 connections: 75 MiB).
	idleRSSLimitKB = 96 << 10
)

// hostileIdleKeepalive opens 1500 connections on rpcbench's wire and 200
// on the gRPC side (preface and SETTINGS sent) and leaves them idle for
// six keepalive intervals, with -keepalive 1s and a -write-timeout below
// it. Healthy idle connections must all be kept, by the server and by
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
	grpcs := make([]*rawgrpc.Conn, idleGRPC)
	for i := range grpcs {
		grpcs[i] = dialGRPC(t, s, rawgrpc.Options{})
	}
	t.AwaitTakeIn(s, "idle connections open on both wires", func(scenario.Counters) bool {
		return t.GRPCCounters(s).ConnsOpen+t.Counters(s).ConnsOpen >= w.Before.ConnsOpen+idleRPC+idleGRPC
	})
	start := time.Now()
	var during, after scenario.Polite
	var duringGRPC, afterGRPC politeGRPC
	for time.Since(start) < idleHold {
		during.Gets(t, c, 1)
		duringGRPC.gets(t, polite, 1)
		time.Sleep(idleKeepAlive / 2) // paces the polite gets through the hold; nothing waits on it
	}
	held := time.Since(start)
	idle := map[string]bool{}
	for _, rc := range rpcs {
		idle[rc.Local()] = true
	}
	for _, g := range grpcs {
		idle[g.LocalAddr()] = true
	}
	closedDuring := scenario.CountEvents(t.Events(s), func(e serverapi.Event) bool {
		return e.Name == serverapi.EventConnClosed && idle[e.Text(serverapi.KeyRemote)]
	})
	rpcCtr, grpcCtr := t.Counters(s), t.GRPCCounters(s)
	w.SampleDuring()

	rpcServed, grpcServed := 0, 0
	var firstBad string
	for i, rc := range rpcs {
		if err := idleGet(t, rc, uint64(i+1)); err == nil {
			rpcServed++
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
	for _, rc := range rpcs {
		rc.NC.Close()
	}
	for _, g := range grpcs {
		g.Close()
	}
	w.Settle()
	after.Gets(t, c, scenario.PoliteAfter)
	afterGRPC.gets(t, polite, scenario.PoliteAfter)

	t.Field("idleConns", fmt.Sprintf("rpcbench=%d grpc=%d", idleRPC, idleGRPC))
	t.Field("keepalive", idleKeepAlive)
	t.Field("writeTimeout", idleWriteTimeout)
	scenario.Between(t, "held", held, idleHold, -1)
	scenario.Expectf(t, "closedWhileIdle", closedDuring, 0, "%s events of idle connections before they were used again", serverapi.EventConnClosed)
	// Control connections may be among those open.
	t.Volatile("openAfterHold", fmt.Sprintf("rpcbench=%d grpc=%d", rpcCtr.ConnsOpen, grpcCtr.ConnsOpen))
	scenario.Expectf(t, "servedAfterHold", fmt.Sprintf("rpcbench=%d grpc=%d", rpcServed, grpcServed),
		fmt.Sprintf("rpcbench=%d grpc=%d", idleRPC, idleGRPC), "first failure: %s", firstBad)
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
