package hostile

import (
	"context"
	"errors"

	"github.com/rpcbench/rpcbench/internal/rawgrpc"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// grpcConnLimit is hostile_grpc_conns_past_limit's -max-conns.
const grpcConnLimit = 8

// hostileGRPCConnsPastLimit opens gRPC connections one after another,
// each making a get, until the server turns one away: with -max-conns 8
// it must serve exactly 8 gRPC connections, the polite client's
// included, and close the 9th on accept, counting it conns_rejected and
// logging LIMIT. The open ones are still served, and once one closes a
// new one is. Control calls are on rpcbench's wire, whose -max-conns is
// its own.
func hostileGRPCConnsPastLimit(t *scenario.T) {
	s := t.StartServerLimits(scenario.ServerOpts{GRPC: true}, scenario.Limits{MaxConns: grpcConnLimit})
	polite := politeConn(t, s)
	w := t.WatchGRPC(s)

	served := 1 // the polite client's connection
	var open []*rawgrpc.Conn
	for served <= grpcConnLimit+1 {
		c, ok := servedGRPC(t, s)
		if !ok {
			break
		}
		open = append(open, c)
		served++
	}
	var during, after politeGRPC
	during.gets(t, polite, scenario.PoliteDuring)
	ctrFull := w.SampleDuring()
	limitEvent := scenario.WaitFor(scenario.SettleTimeout, func() bool {
		_, n := limitCounts(t.Events(s))
		return n[serverapi.FlagMaxConns] > 0
	})

	// One closes; the server must take a new one in its place once it
	// has noticed.
	gone := open[0].LocalAddr()
	open[0].Close()
	reaped := scenario.WaitFor(scenario.SettleTimeout, func() bool {
		return scenario.CountEvents(t.Events(s), func(e serverapi.Event) bool {
			return e.Name == serverapi.EventConnClosed && e.Text(serverapi.KeyWire) == serverapi.WireGRPC && e.Text(serverapi.KeyRemote) == gone
		}) == 1
	})
	replacement, servedAfter := servedGRPC(t, s)
	if servedAfter {
		replacement.Close()
	}
	for _, c := range open[1:] {
		c.Close()
	}
	ctr := w.Settle()
	after.gets(t, polite, scenario.PoliteAfter)
	limits, limitEvents := limitCounts(t.Events(s))

	t.Field("maxConns", grpcConnLimit)
	scenario.Expectf(t, "served", served, grpcConnLimit, "gRPC connections served before one was closed unanswered, the polite client's included")
	scenario.Expectf(t, "connsOpenFull", ctrFull.ConnsOpen, int64(grpcConnLimit), "gRPC connections open while full")
	scenario.Expectf(t, "connsRejected", ctr.ConnsRejected, int64(1), "gRPC connections turned away")
	scenario.Expectf(t, "limitLogged", limitEvent && limits[serverapi.FlagMaxConns] == 1, true,
		"%d LIMIT events for %s counting %d, want one counting 1", limitEvents[serverapi.FlagMaxConns], serverapi.FlagMaxConns, limits[serverapi.FlagMaxConns])
	t.Check(reaped, "the server did not log %s for the closed gRPC connection within %v", serverapi.EventConnClosed, scenario.SettleTimeout)
	scenario.Expectf(t, "servedAfterOneClosed", servedAfter, true, "a gRPC connection opened after one of the %d closed", grpcConnLimit)
	t.Field("politeWhileFull", &during)
	t.Field("politeAfter", &after)
	w.Report(scenario.RSSLimitTightKB)
	during.check(t, "while the gRPC side was at -max-conns")
	after.check(t, "after the attack")
}

// servedGRPC opens a gRPC connection to s and makes a get on it. It
// returns the connection and true when the get was answered OK, or false
// when the server closed the connection unanswered, as it does one over
// -max-conns; anything else fails the scenario.
func servedGRPC(t *scenario.T, s *scenario.Server) (*rawgrpc.Conn, bool) {
	ctx, cancel := context.WithTimeout(t.Ctx, scenario.IOTimeout)
	defer cancel()
	c, err := rawgrpc.Dial(ctx, s.Addr)
	if scenario.IsReset(err) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("gRPC dial %s: %v", s.Addr, err)
	}
	t.Cleanup(func() { c.Close() })
	r, err := getOnce(t, c)
	if errors.Is(err, rawgrpc.ErrClosed) || scenario.IsReset(err) || err == nil && r.ConnClosed {
		c.Close()
		return nil, false
	}
	var p politeGRPC
	if p.add(r, err); p.OK != 1 {
		t.Fatalf("gRPC connection %s: get: %s", c.LocalAddr(), p.bad)
	}
	return c, true
}
