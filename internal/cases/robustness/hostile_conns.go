package robustness

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/transport"
)

func hostileSlowSender(t *scenario.T) {
	const (
		slowBytes = 15
		pace      = 100 * time.Millisecond
	)
	s := t.StartServer(scenario.ServerOpts{Workers: 1})
	c := t.PoliteClient(s)
	w := t.Watch(s)

	req := t.RequestBytes(1, bank.MethodGet, "account=acct-slow")
	nc := t.DialRaw(s.Addr)
	// The ticker paces the attack; after each byte the polite client makes
	// one get, so every get overlaps a frame the server holds in part.
	sent := make(chan error, slowBytes)
	start := time.Now()
	go func() {
		tick := time.NewTicker(pace)
		defer tick.Stop()
		for i := range slowBytes {
			<-tick.C
			sent <- scenario.WriteTimed(nc, req[i:i+1])
		}
	}()
	var during, after scenario.Polite
	for range slowBytes {
		if err := <-sent; err != nil {
			t.Fatalf("slow sender: %v", err)
		}
		during.Gets(t, c, 1)
	}
	slowFor := time.Since(start)
	w.SampleDuring()

	var answer proto.Frame
	err := scenario.WriteTimed(nc, req[slowBytes:])
	if err == nil {
		answer, err = scenario.ReadFrame(nc)
	}
	nc.Close()
	ctr := w.Settle()
	after.Gets(t, c, scenario.PoliteAfter)
	slowOK := err == nil && answer.ID == 1 && answer.Status == proto.StatusOK && scenario.FieldOf(answer.Payload, "account") == "acct-slow"

	t.Field("workers", 1)
	t.Field("slowBytes", fmt.Sprintf("%d/%d", slowBytes, len(req)))
	t.Field("pace", scenario.Millis(pace))
	t.Volatile("slowFor", scenario.Millis(slowFor))
	t.Field("politeDuring", &during)
	scenario.Expectf(t, "politeDuringMaxAttempts", during.MaxAttempts, 1, "the slow sender held up the worker or the server")
	t.Volatile("politeDuringSlowest", scenario.Millis(during.Slowest))
	t.Field("slowAnswer", fmt.Sprintf("%v account=%s", answer.Status, scenario.FieldOf(answer.Payload, "account")))
	t.Field("politeAfter", &after)
	scenario.Expect(t, "protocolErrors", ctr.ProtocolErrors, 0)
	w.Report(scenario.RSSLimitKB)
	during.Check(t, "while the slow sender held a partial frame")
	t.Check(slowOK, "slow request answered %v %v %q, want OK for acct-slow", err, answer.Status, answer.Payload)
	after.Check(t, "after the attack")
}

func hostileIdleConnections(t *scenario.T) {
	const idle = 500
	s := t.StartServer(scenario.ServerOpts{})
	c := t.PoliteClient(s)
	w := t.Watch(s)

	ncs := make([]*net.TCPConn, idle)
	for i := range ncs {
		ncs[i] = t.DialRaw(s.Addr)
	}
	t.AwaitTakeIn(s, "idle connections open", func(ctr scenario.Counters) bool {
		return ctr.ConnsOpen >= w.Before.ConnsOpen+idle
	})
	var during, after scenario.Polite
	during.Gets(t, c, scenario.PoliteDuring)
	ctrDuring := w.SampleDuring()

	for _, nc := range ncs {
		nc.Close()
	}
	ctr := w.Settle()
	after.Gets(t, c, scenario.PoliteAfter)

	// Each idle connection costs a reader and a writer goroutine and
	// nothing more. Below, the last connection's goroutines may not have
	// started; above, the control connections of the polls before the
	// sample may not have been reaped.
	grown := w.During.Goroutines - w.Before.Goroutines
	t.Field("idleConns", idle)
	t.Volatile("connsOpenDuring", ctrDuring.ConnsOpen)
	scenario.Expectf(t, "connsRejected", ctr.ConnsRejected, 0, "idle connections are under -max-conns")
	t.Field("politeDuring", &during)
	t.Field("politeAfter", &after)
	w.Report(scenario.RSSLimitKB)
	t.Check(grown >= 2*idle-scenario.GoroutineSlack && grown <= 2*idle+2*scenario.GoroutineSlack,
		"server goroutines grew by %d with %d idle connections, want %d to %d", grown, idle, 2*idle-scenario.GoroutineSlack, 2*idle+2*scenario.GoroutineSlack)
	during.Check(t, "with the idle connections open")
	after.Check(t, "after the attack")
}

func hostileConnectChurn(t *scenario.T) {
	const (
		conns    = 2000
		churners = 8
	)
	s := t.StartServer(scenario.ServerOpts{})
	c := t.PoliteClient(s)
	w := t.Watch(s)
	base := t.Counters(s).ConnsScenario

	ch := startChurn(t, s.Addr, conns, churners)
	var during, after scenario.Polite
	politeDone := during.Until(t, c, ch.done)
	scenario.WaitFor(scenario.SettleTimeout, func() bool { return t.Counters(s).ConnsScenario >= base+conns/2 })
	w.SampleDuring()
	<-politeDone

	accepted := scenario.WaitFor(scenario.SettleTimeout, func() bool { return t.Counters(s).ConnsScenario >= base+conns })
	ctr := w.Settle()
	fresh := t.Client(s.Addr, client.DefaultConfig())
	after.Gets(t, fresh, scenario.PoliteAfter)
	after.Gets(t, c, scenario.PoliteAfter)

	t.Field("conns", conns)
	t.Field("churners", churners)
	scenario.Expect(t, "dialErrors", ch.dialErrs.Load(), 0)
	t.Field("serverAccepted", ctr.ConnsScenario-base)
	t.Check(accepted, "server accepted %d of %d churned connections", ctr.ConnsScenario-base, conns)
	// With both cores busy the server may not yet have noticed that
	// -max-conns (1024) of the churned connections closed, and it then
	// turns new ones away at once, as it should: rejections are counted,
	// not forbidden. A client write can fail only on a connection the
	// server turned away.
	t.Volatile("connsRejected", ctr.ConnsRejected)
	t.Volatile("writeErrors", ch.writeErrs.Load())
	scenario.Expectf(t, "writeErrorsOnlyWhereRejected", ch.writeErrs.Load() <= ctr.ConnsRejected, true,
		"%d writes failed, %d connections rejected", ch.writeErrs.Load(), ctr.ConnsRejected)
	limitSum, limitLines, limitGap := awaitMaxConnsLimits(t, s, ctr.ConnsRejected)
	scenario.Expectf(t, "limitCountSumIsConnsRejected", limitSum == ctr.ConnsRejected, true,
		"%s %s=%s counts sum to %d, conns_rejected %d", serverapi.EventLimit, serverapi.KeyLimit, serverapi.FlagMaxConns, limitSum, ctr.ConnsRejected)
	t.Volatile("limitLines", limitLines)
	scenario.Expectf(t, "limitLinesSpaced", limitGap >= limitMinGap, true,
		"closest LIMIT lines %v apart, want at least %v", limitGap, limitMinGap)
	scenario.Expectf(t, "protocolErrors", ctr.ProtocolErrors, 0, "partial frames are not bad ones")
	t.Field("servedDuring", during.Calls > 0 && during.OK == during.Calls)
	t.Volatile("politeDuring", &during)
	t.Field("politeAfterFreshAndOld", &after)
	w.Report(scenario.RSSLimitKB)
	during.Check(t, "during the churn")
	after.Check(t, "after the churn, on a new connection and the old one")
}

// churn is connect/close churn against a server.
type churn struct {
	done                chan struct{} // closed once every connection was made and ended
	dialErrs, writeErrs atomic.Int64
}

// startChurn opens conns connections to addr from churners goroutines and
// ends each at once: connection i closes (i%4 == 0), resets (1), writes
// part of a frame and closes (2), or writes part of a frame and resets
// (3). A cleanup waits for the churners, should the scenario stop early.
func startChurn(t *scenario.T, addr string, conns, churners int) *churn {
	ch := &churn{done: make(chan struct{})}
	partial := t.RequestBytes(1, bank.MethodGet, "account=acct-churn")[:10]
	var wg sync.WaitGroup
	for g := range churners {
		wg.Go(func() {
			for i := g; i < conns; i += churners {
				ch.one(addr, i%4, partial)
			}
		})
	}
	go func() { wg.Wait(); close(ch.done) }()
	t.Cleanup(func() { <-ch.done })
	return ch
}

// one makes one churned connection of the given kind (see churn).
func (ch *churn) one(addr string, kind int, partial []byte) {
	nc, err := net.DialTimeout("tcp", addr, scenario.IOTimeout)
	if err != nil {
		ch.dialErrs.Add(1)
		return
	}
	tc := nc.(*net.TCPConn)
	if kind >= 2 {
		if err := scenario.WriteTimed(tc, partial); err != nil {
			ch.writeErrs.Add(1)
		}
	}
	if kind%2 == 1 {
		scenario.ResetConn(tc)
	} else {
		tc.Close()
	}
}

// neverReader floods a server with pipelined requests and never reads a
// byte of the answers.
type neverReader struct {
	name    string
	nc      *net.TCPConn
	reqs    []byte        // one batch of encoded requests, sent over and over
	sent    int64         // bytes written
	stalled chan struct{} // closed once a write made no progress for stallAfter
	err     error         // how the attack ended, as the attacker saw it
}

// Timing of hostile_never_reads.
const (
	// The server must drop each attacker within neverReadDropWithin. It
	// normally takes the write timeout and a few hundred ms. But a segment
	// lost early on loopback can leave the attacker's kernel backing off
	// its retransmits for seconds, while the server has nothing to read
	// and its answers still fit its send buffer.
	neverReadDropWithin = 30 * time.Second
	// neverReadReadTimeout is the server's -read-timeout: a request the
	// attacker's kernel left cut in the middle is dropped after it.
	neverReadReadTimeout = 2 * time.Second
	// The server must stop reading each attacker within
	// neverReadStopWithin.
	neverReadStopWithin = 3 * time.Second
	// A write that makes no progress for neverReadStallAfter means TCP
	// is holding the attacker back: the server stopped reading it.
	neverReadStallAfter = 100 * time.Millisecond
	// A small receive buffer, and a fixed one: the kernel no longer grows
	// it. Below the 64 KiB segments of loopback it would drop the
	// server's segments, and both ends would back off retransmitting
	// instead of the server's write blocking.
	neverReadBuffer = 256 << 10
	neverReadBatch  = 256 // requests per write
)

func hostileNeverReads(t *scenario.T) {
	const (
		writeTimeout = time.Second
		maxOutBytes  = proto.MaxFrameLen + 4
	)
	s := t.StartServerLimits(scenario.ServerOpts{WriteTimeout: writeTimeout, MaxOutBytes: maxOutBytes},
		scenario.Limits{ReadTimeout: neverReadReadTimeout})
	c := t.PoliteClient(s)
	w := t.Watch(s)
	base := t.Counters(s)

	// Plain gets may run on the connection's reader, which then blocks
	// writing their answers itself. A sleep field, even sleep=0, makes the
	// bank declare a request as one that may block, which sends it through
	// the queue and the writer goroutine instead, so that the reader stops
	// reading at -max-out-bytes.
	attackers := []*neverReader{
		newNeverReader(t, s, "inline", "account=acct-never"),
		newNeverReader(t, s, "queued", "account=acct-never sleep=0"),
	}
	start := time.Now()
	wait := attack(t, attackers)
	for _, a := range attackers {
		a.awaitStalled(t)
	}

	var during, after scenario.Polite
	during.Gets(t, c, scenario.PoliteDuring)
	ctrDuring := w.SampleDuring()
	// The server's log says when it dropped each attacker: the
	// attacker's own kernel may learn of it only seconds later, backing
	// off its retransmits on loopback, so the scenario closes the
	// attackers' sockets once the server has.
	dropped := func(ctr scenario.Counters) int64 {
		return ctr.WriteTimeouts - base.WriteTimeouts + ctr.ReadTimeouts - base.ReadTimeouts
	}
	scenario.WaitFor(neverReadDropWithin, func() bool { return dropped(t.Counters(s)) >= int64(len(attackers)) })
	for _, a := range attackers {
		a.nc.Close()
	}
	wait()
	drops := neverReadDrops(t.Events(s), start)
	ctr := w.Settle()
	after.Gets(t, c, scenario.PoliteAfter)

	t.Field("attackers", len(attackers))
	t.Field("writeTimeout", writeTimeout)
	t.Field("readTimeout", neverReadReadTimeout)
	t.Field("maxOutBytes", maxOutBytes)
	for _, a := range attackers {
		d, ok := drops[a.nc.LocalAddr().String()]
		scenario.Expectf(t, a.name+"Dropped", ok, true, "the server logged neither %s nor %s for attacker %s within %v (the attacker saw: %v)",
			serverapi.EventWriteTimeout, serverapi.EventReadTimeout, a.name, neverReadDropWithin, a.err)
		t.Volatile(a.name+"SentBytes", a.sent)
		t.Volatile(a.name+"DroppedBy", d.by)
		t.Volatile(a.name+"DroppedAfter", scenario.Millis(d.after))
	}
	scenario.Expectf(t, "attackersOpenDuring", ctrDuring.ConnsOpen-w.Before.ConnsOpen >= int64(len(attackers)), true,
		"the polite gets came after the server dropped the attackers (conns_open=%d, baseline %d)", ctrDuring.ConnsOpen, w.Before.ConnsOpen)
	// Each attacker is dropped once, by one of the two timeouts: usually
	// the write timeout, the attacker's window being shut. But over real
	// TCP the kernels may stall the flow first: a segment of the
	// attacker's lost on loopback leaves its kernel backing off its
	// retransmits for seconds with a request cut in the middle, and the
	// server drops it at -read-timeout, its answers still fitting its
	// send buffer. Which one is only shown; their sum is asserted.
	scenario.Expect(t, "serverDrops", dropped(ctr), int64(len(attackers)))
	t.Volatile("writeTimeouts", ctr.WriteTimeouts-base.WriteTimeouts)
	t.Volatile("readTimeouts", ctr.ReadTimeouts-base.ReadTimeouts)
	// Usually the queued attacker's answers pile up until its reader
	// stops at -max-out-bytes; when the flow stalls first they do not,
	// so how often the limit was met is only shown. The limit itself is
	// asserted deterministically by internal/server's
	// TestClientThatNeverReads.
	t.Volatile("outLimitWaits", ctr.OutLimitWaits)
	t.Field("politeDuring", &during)
	t.Field("politeAfter", &after)
	w.Report(scenario.RSSLimitKB)
	during.Check(t, "during the attack")
	after.Check(t, "after the attack")
}

// neverReadDrop is how the server dropped an attacker, by its log.
type neverReadDrop struct {
	by    string        // WRITE_TIMEOUT or READ_TIMEOUT
	after time.Duration // from the attack's start
}

// neverReadDrops returns, by remote address, the first WRITE_TIMEOUT or
// READ_TIMEOUT the server logged for each connection.
func neverReadDrops(evs []serverapi.Event, start time.Time) map[string]neverReadDrop {
	out := map[string]neverReadDrop{}
	for _, e := range evs {
		if e.Name != serverapi.EventWriteTimeout && e.Name != serverapi.EventReadTimeout {
			continue
		}
		remote := e.Text(serverapi.KeyRemote)
		if _, seen := out[remote]; !seen {
			out[remote] = neverReadDrop{by: e.Name, after: e.Time.Sub(start)}
		}
	}
	return out
}

// newNeverReader connects an attacker that will send gets with payload.
func newNeverReader(t *scenario.T, s *scenario.Server, name, payload string) *neverReader {
	a := &neverReader{name: name, stalled: make(chan struct{})}
	for id := range neverReadBatch {
		a.reqs = append(a.reqs, t.RequestBytes(uint64(id+1), bank.MethodGet, payload)...)
	}
	a.nc = t.DialRaw(s.Addr)
	if err := a.nc.SetReadBuffer(neverReadBuffer); err != nil {
		t.Fatalf("read buffer: %v", err)
	}
	return a
}

// attack starts every attacker and returns what waits for all of them to
// end. Should the scenario stop early, a cleanup closes their connections
// and waits for them, so no attacker outlives it.
func attack(t *scenario.T, attackers []*neverReader) (wait func()) {
	var wg sync.WaitGroup
	for _, a := range attackers {
		wg.Go(a.run)
	}
	t.Cleanup(func() {
		for _, a := range attackers {
			a.nc.Close()
		}
		wg.Wait()
	})
	return wg.Wait
}

// run writes requests until the server drops the connection, the
// connection fails otherwise, or neverReadDropWithin passes.
func (a *neverReader) run() {
	defer a.nc.Close()
	start := time.Now()
	end := start.Add(neverReadDropWithin)
	stalled := false
	for b := a.reqs; time.Now().Before(end); {
		a.nc.SetWriteDeadline(time.Now().Add(neverReadStallAfter))
		n, err := a.nc.Write(b)
		a.sent += int64(n)
		b = b[n:]
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			if !stalled {
				stalled = true
				close(a.stalled)
			}
		case scenario.IsReset(err):
			a.err = fmt.Errorf("dropped after %v", time.Since(start).Round(time.Millisecond))
			return
		case errors.Is(err, net.ErrClosed):
			// The scenario closed it: the server had dropped it.
			return
		case err != nil:
			a.err = err
			return
		}
		if len(b) == 0 {
			b = a.reqs
		}
	}
	a.err = fmt.Errorf("still connected after %v", neverReadDropWithin)
}

// awaitStalled fails the scenario unless TCP holds the attacker back
// within neverReadStopWithin: the server stopped reading it.
func (a *neverReader) awaitStalled(t *scenario.T) {
	select {
	case <-a.stalled:
	case <-time.After(neverReadStopWithin):
		t.Fatalf("attacker %s: the server kept reading for %v", a.name, neverReadStopWithin)
	}
}

// connLimit is hostile_conns_past_limit's -max-conns.
const connLimit = 8

// pastLimitBurst is how many connections hostile_conns_past_limit opens
// in a loop while the server is at -max-conns.
const pastLimitBurst = 500

// hostileConnsPastLimit opens connections one after another, each making
// a get, until the server turns one away: with -max-conns 8 it must serve
// exactly 8, the polite client's included, and close the 9th on accept.
// The connections open are still served; a peer then connecting in a
// loop is turned away each time, and costs the log a LIMIT line a second,
// not a line a connection. Once one closes a new one is served. No
// control call is made while the limit is reached, since its own
// connection would be turned away: the server's log is read instead.
func hostileConnsPastLimit(t *scenario.T) {
	s := t.StartServerLimits(scenario.ServerOpts{}, scenario.Limits{MaxConns: connLimit})
	c := t.PoliteClient(s)

	served := 1 // the polite client's connection
	var open []*scenario.RawConn
	for served <= connLimit+1 {
		rc, ok := servedConn(t, s.Addr, uint64(served))
		if !ok {
			break
		}
		open = append(open, rc)
		served++
	}
	// The 9th was logged before the server closed it.
	firstLimit := "none"
	if evs := maxConnsLimits(t.Events(s)); len(evs) > 0 {
		firstLimit = evs[0].String()
	}
	var during scenario.Polite
	during.Gets(t, c, scenario.PoliteDuring)

	before := len(t.Events(s))
	start := time.Now()
	servedInBurst := 0
	for range pastLimitBurst {
		if rc, ok := servedConn(t, s.Addr, 1); ok {
			servedInBurst++
			rc.NC.Close()
		}
	}
	took := time.Since(start)
	// Nothing else runs meanwhile: what the server logged in the burst is
	// what the connections turned away cost its log.
	burstLines := len(t.Events(s)) - before

	// One closes; the server must take a new one in its place once it
	// has noticed.
	gone := open[0].Local()
	open[0].NC.Close()
	reaped := scenario.WaitFor(scenario.SettleTimeout, func() bool {
		return scenario.CountEvents(t.Events(s), func(e serverapi.Event) bool {
			return e.Name == serverapi.EventConnClosed && e.Text(serverapi.KeyRemote) == gone
		}) == 1
	})
	replacement, servedAfter := servedConn(t, s.Addr, 1)
	if servedAfter {
		replacement.NC.Close()
	}
	for _, rc := range open[1:] {
		rc.NC.Close()
	}
	// Only the polite client's connection left: a control connection is
	// served again.
	scenario.WaitFor(scenario.SettleTimeout, func() bool {
		evs := t.Events(s)
		return scenario.CountEvents(evs, isEvent(serverapi.EventConnOpen))-scenario.CountEvents(evs, isEvent(serverapi.EventConnClosed)) == 1
	})
	rejected := t.Counters(s).ConnsRejected
	limitSum, limitLines, limitGap := awaitMaxConnsLimits(t, s, rejected)

	t.Field("maxConns", connLimit)
	scenario.Expectf(t, "served", served, connLimit, "connections served before one was closed unanswered, the polite client's included")
	scenario.Expectf(t, "turnedAwayLogged", firstLimit, fmt.Sprintf("%s %s=1 %s=%s", serverapi.EventLimit, serverapi.KeyCount, serverapi.KeyLimit, serverapi.FlagMaxConns),
		"the first event of the connection turned away, logged at once")
	t.Field("burst", pastLimitBurst)
	scenario.Expectf(t, "servedInBurst", servedInBurst, 0, "connections served while the server was at -max-conns")
	scenario.Expectf(t, "connsRejected", rejected, int64(1+pastLimitBurst), "the 9th and the burst's")
	scenario.Expectf(t, "limitCountSum", limitSum, rejected, "sum of the %s %s=%s events' counts, once the last second's were logged", serverapi.EventLimit, serverapi.KeyLimit, serverapi.FlagMaxConns)
	burstBound := 1 + int(took/transport.LimitLogInterval)
	scenario.Expectf(t, "burstLogBounded", burstLines <= burstBound, true,
		"%d lines logged while %d connections were turned away in %v, want at most %d (one a second)", burstLines, pastLimitBurst, took, burstBound)
	t.Volatile("limitLines", limitLines)
	scenario.Expectf(t, "limitLinesSpaced", limitGap >= limitMinGap, true,
		"closest LIMIT lines %v apart, want at least %v", limitGap, limitMinGap)
	t.Field("politeWhileFull", &during)
	t.Check(reaped, "the server did not log %s for the closed connection within %v", serverapi.EventConnClosed, scenario.SettleTimeout)
	scenario.Expectf(t, "servedAfterOneClosed", servedAfter, true, "a connection opened after one of the %d closed", connLimit)
	during.Check(t, "while the server was at -max-conns")
}

// limitMinGap is the least time between two LIMIT lines of a limit that
// a scenario accepts: transport.LimitLogInterval, less the time between
// the moment the server takes as the last line's and the line's own
// time stamp.
const limitMinGap = transport.LimitLogInterval - 50*time.Millisecond

// isEvent matches the events named name.
func isEvent(name string) func(serverapi.Event) bool {
	return func(e serverapi.Event) bool { return e.Name == name }
}

// maxConnsLimits returns rpcbench's wire's LIMIT events for -max-conns
// (the gRPC side's carry wire=grpc).
func maxConnsLimits(evs []serverapi.Event) []serverapi.Event {
	var out []serverapi.Event
	for _, e := range evs {
		if e.Name == serverapi.EventLimit && e.Text(serverapi.KeyLimit) == serverapi.FlagMaxConns && e.Text(serverapi.KeyWire) == "" {
			out = append(out, e)
		}
	}
	return out
}

// awaitMaxConnsLimits waits until rpcbench's wire's LIMIT max-conns
// events count rejected refusals, those of the last second being logged
// a second after its first, or SettleTimeout has passed. It returns the
// sum of their counts, their number, and the least time between two in
// a row (an hour when fewer than two).
func awaitMaxConnsLimits(t *scenario.T, s *scenario.Server, rejected int64) (sum, lines int64, gap time.Duration) {
	var evs []serverapi.Event
	scenario.WaitFor(scenario.SettleTimeout, func() bool {
		evs, sum = maxConnsLimits(t.Events(s)), 0
		for _, e := range evs {
			n, _ := e.Int(serverapi.KeyCount)
			sum += n
		}
		return sum >= rejected
	})
	gap = time.Hour
	for i := 1; i < len(evs); i++ {
		gap = min(gap, evs[i].Time.Sub(evs[i-1].Time))
	}
	return sum, int64(len(evs)), gap
}

// servedConn opens a connection to addr and makes a get with the given ID
// on it. It returns the connection and true when the get was answered OK,
// or false when the server closed the connection unanswered, as it does
// one over -max-conns; anything else fails the scenario.
func servedConn(t *scenario.T, addr string, id uint64) (*scenario.RawConn, bool) {
	rc := t.DialFrames(addr)
	werr := scenario.WriteTimed(rc.NC, t.RequestBytes(id, bank.MethodGet, "account=acct-limit"))
	if werr != nil && !scenario.IsReset(werr) {
		t.Fatalf("connection %s: %v", rc.Local(), werr)
	}
	var (
		f   proto.Frame
		err = werr
	)
	if err == nil {
		f, err = rc.Read()
	}
	switch {
	case err == nil && f.ID == id && f.Status == proto.StatusOK:
		return rc, true
	case errors.Is(err, io.EOF) || scenario.IsReset(err):
		rc.NC.Close()
		return nil, false
	}
	t.Fatalf("connection %s: get answered %v %v %q, want OK or a close", rc.Local(), err, f.Status, f.Payload)
	return nil, false
}
