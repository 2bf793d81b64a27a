package hostile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"

	"github.com/rpcbench/rpcbench/internal/grpcwire"
	"github.com/rpcbench/rpcbench/internal/rawgrpc"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// Timing of hostile_grpc_continuation_flood.
const (
	// contCloseWithin is how soon the contract closes a connection
	// flooding empty CONTINUATION frames: at once in practice (a few
	// milliseconds, tens with both cores busy).
	contCloseWithin = time.Second
	// contGiveUp ends the flood of a server that never closes it.
	contGiveUp = 5 * time.Second
	contBatch  = 512 // CONTINUATION frames per write
)

// hostileGRPCContinuationFlood sends HEADERS without END_HEADERS, then
// empty CONTINUATION frames as fast as the connection takes them: a
// header block that never ends and never grows, which no header list
// limit catches (CVE-2024-27316's family). The server must close the
// connection within a second with GOAWAY(ENHANCE_YOUR_CALM), counting
// it calm_closes, while a polite client is served.
func hostileGRPCContinuationFlood(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{GRPC: true})
	polite := politeConn(t, s)
	w := t.WatchGRPC(s)

	p := dialH2(t, s)
	p.read(t)
	if err := p.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: headerBlock("Get")}); err != nil {
		t.Fatalf("headers: %v", err)
	}
	start := time.Now()
	var sent int64
	var floodErr error
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		for time.Since(start) < contGiveUp {
			select {
			case <-p.ended:
				return
			default:
			}
			for range contBatch {
				p.fr.WriteContinuation(1, false, nil)
			}
			if err := p.flush(); err != nil {
				if !scenario.IsReset(err) {
					floodErr = err
				}
				return
			}
			sent += contBatch
		}
	}()
	t.Cleanup(func() { p.nc.Close(); <-flooded })

	during, closed, goAway, ctr := floodEnd(t, p, w, polite, flooded)
	var after politeGRPC
	after.gets(t, polite, scenario.PoliteAfter)

	t.Volatile("continuationsSent", sent)
	t.Check(floodErr == nil, "flood: %v", floodErr)
	scenario.Expectf(t, "closedByServer", closed, true, "the flooding connection was still open %v after the flood began", time.Since(start).Round(time.Millisecond))
	if closed {
		scenario.Within(t, "closedAfter", p.endAt.Sub(start), contCloseWithin)
	}
	scenario.Expectf(t, "goAway", goAway, http2.ErrCodeEnhanceYourCalm.String(), "the GOAWAY the server sent")
	scenario.Expect(t, "calmCloses", ctr.CalmCloses, int64(1))
	t.Field("politeDuring", &during)
	t.Field("politeAfter", &after)
	w.Report(scenario.RSSLimitTightKB)
	during.check(t, "during the flood")
	after.check(t, "after the flood")
}

// floodEnd is what a one-connection flood does while and once its
// flooder floods p: the polite gets made during it, then, once flooded
// is closed, whether the server ended p within IOTimeout and the GOAWAY
// it sent, and the server's counters once it settled with p closed.
func floodEnd(t *scenario.T, p *h2Peer, w *scenario.Watch, polite *rawgrpc.Conn, flooded <-chan struct{}) (during politeGRPC, closed bool, goAway string, ctr scenario.Counters) {
	during.gets(t, polite, scenario.PoliteDuring)
	w.SampleDuring()
	<-flooded
	closed = waitEnded(p, scenario.IOTimeout)
	goAway = receivedGoAway(p)
	p.nc.Close()
	return during, closed, goAway, w.Settle()
}

// waitEnded waits up to d for p's reader to see the connection end.
func waitEnded(p *h2Peer, d time.Duration) bool {
	select {
	case <-p.ended:
		return true
	case <-time.After(d):
		return false
	}
}

// receivedGoAway names the code of the GOAWAY p received, "none" without
// one.
func receivedGoAway(p *h2Peer) string {
	select {
	case code := <-p.goAway:
		return code.String()
	default:
		return "none"
	}
}

// Loads of hostile_grpc_rapid_reset.
const (
	// rrMax is how many streams the attacker opens and resets at most,
	// in batches of rrBatch, if the server never stops it.
	rrMax   = 20000
	rrBatch = 100
	// rrLogBound is the most log bytes one rapid-resetting connection
	// may cause: its events, oracle ones included (SPEC.md, "Hostile
	// peers").
	rrLogBound = grpcwire.RapidResetLogBound
)

// hostileGRPCRapidReset opens streams and resets each at once
// (HEADERS, RST_STREAM(CANCEL)), in batches, as fast as the connection
// takes them (CVE-2023-44487). The server must close the connection
// with GOAWAY(ENHANCE_YOUR_CALM), counting it calm_closes, its log lines
// for that connection must stay within rrLogBound bytes with none of its
// ATTEMPT events dropped, and what its log budget left out must be
// summarised by LOG_SUPPRESSED, while a polite client is served.
func hostileGRPCRapidReset(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{GRPC: true})
	polite := politeConn(t, s)
	w := t.WatchGRPC(s)

	p := dialH2(t, s)
	p.read(t)
	conn := grpcConn(t, s, p.nc.LocalAddr().String())
	var (
		opened   int
		floodErr error
	)
	block := headerBlock("Get")
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		for opened < rrMax {
			select {
			case <-p.ended:
				return
			default:
			}
			for range rrBatch {
				id := uint32(2*opened + 1)
				p.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndHeaders: true})
				p.fr.WriteRSTStream(id, http2.ErrCodeCancel)
				opened++
			}
			if err := p.flush(); err != nil {
				if !scenario.IsReset(err) {
					floodErr = err
				}
				return
			}
		}
	}()
	t.Cleanup(func() { p.nc.Close(); <-flooded })

	during, closed, goAway, ctr := floodEnd(t, p, w, polite, flooded)
	rpcCtr := t.Counters(s)
	var after politeGRPC
	after.gets(t, polite, scenario.PoliteAfter)
	// The server logs a HEADERS's ATTEMPT before it counts it, so every
	// HEADERS counted here is in the log read after.
	final := t.GRPCCounters(s)
	evs := t.Events(s)
	logBytes, logLines := connLogBytes(t, s, conn)
	// The server logs ATTEMPT for each HEADERS it takes, in the order
	// they came: streams 1, 3, 5 and so on up to the last it took before
	// its verdict. A gap is an oracle event dropped, and so is any
	// HEADERS the server counted without its ATTEMPT in the log, the
	// last ones included.
	attempts, gap := 0, "none"
	for _, e := range evs {
		if n, _ := e.Int(serverapi.KeyConn); e.Name != serverapi.EventAttempt || n != conn || e.Text(serverapi.KeyWire) != serverapi.WireGRPC {
			continue
		}
		if id, _ := e.Int(serverapi.KeyStream); id != int64(2*attempts+1) && gap == "none" {
			gap = fmt.Sprint(2*attempts + 1)
		}
		attempts++
	}
	// Every LOG_SUPPRESSED event, on either wire: together they must
	// account for every event left out.
	suppressed := int64(0)
	for _, e := range evs {
		if e.Name == serverapi.EventLogSuppressed {
			c, _ := e.Int(serverapi.KeyCount)
			suppressed += c
		}
	}

	t.Volatile("streamsOpened", opened)
	t.Check(floodErr == nil, "flood: %v", floodErr)
	scenario.Expectf(t, "closedByServer", closed, true, "the connection was still open after %d streams opened and reset", opened)
	scenario.Expectf(t, "goAway", goAway, http2.ErrCodeEnhanceYourCalm.String(), "the GOAWAY the server sent")
	scenario.Expect(t, "calmCloses", ctr.CalmCloses, int64(1))
	t.Volatile("attemptsLogged", attempts)
	// Each HEADERS counts once, in requests.* when taken and in
	// streams_refused when a limit refused it (SPEC.md, "Counters"); the
	// polite client's gets, one stream each, are the rest.
	politeGets := 1 + during.Calls + after.Calls
	counted := final.RequestsGet + final.RequestsDebit + final.RequestsEcho + final.RequestsOther + final.StreamsRefused - int64(politeGets)
	t.Volatile("headersCounted", counted)
	scenario.Expectf(t, "attemptsUnlogged", counted-int64(attempts), 0, "HEADERS of the resetting connection that the server counted (%d: requests.* and streams_refused on the gRPC side, less the polite client's %d gets) against its %d ATTEMPT events", counted, politeGets, attempts)
	t.Volatile("connLogLines", logLines)
	scenario.AtMost(t, "connLogBytes", logBytes, int64(rrLogBound), "the server log lines of the resetting connection")
	scenario.Expectf(t, "attemptMissing", gap, "none", "the first stream whose ATTEMPT event is missing from the server log, among the %d logged: oracle events are never dropped", attempts)
	t.Volatile("logSuppressed", ctr.LogSuppressed+rpcCtr.LogSuppressed)
	scenario.Expectf(t, "suppressedSummarised", suppressed, ctr.LogSuppressed+rpcCtr.LogSuppressed, "the counts of the %s events, against log_suppressed on both wires", serverapi.EventLogSuppressed)
	t.Field("politeDuring", &during)
	t.Field("politeAfter", &after)
	w.Report(scenario.RSSLimitTightKB)
	during.check(t, "during the resets")
	after.check(t, "after the resets")
}

// Loads and timing of hostile_grpc_never_reads.
const (
	// nrDropWithin is how soon after its flood began a flooder must be
	// closed. The server's flood verdict comes once its writer is
	// blocked and enough acknowledgements wait behind it: about a second
	// of flooding on an idle machine, up to 2.3 s in ten runs of the
	// group with both cores busy (stress-ng --cpu 2). nrWriteTimeout is
	// far beyond it, so that a server that waits for its write timeout
	// instead fails.
	nrDropWithin   = 12 * time.Second
	nrWriteTimeout = 40 * time.Second
	nrGiveUp       = nrWriteTimeout + 5*time.Second
	// A write that makes no progress for nrStallAfter means the flood no
	// longer reaches the server: see hostileGRPCNeverReads.
	nrStallAfter = 3 * time.Second
	// nrRSSLimitKB bounds the server's memory growth: the garbage of
	// parsing a million frames, and acknowledgements queued up to the
	// verdict's cap. Runs grew it by up to 15 MiB.
	nrRSSLimitKB = 32 << 10
	nrBatch      = 1024 // frames per write
	// nrTries is how many connections a kind of flood may take: each
	// one TCP stalled is tried again.
	nrTries = 3
	// nrBuffer is the flooder's receive buffer, set before it connects:
	// small, so that the server's writer blocks soon, and fixed, so that
	// the kernel does not grow it; but not below loopback's 64 KiB
	// segments, or its kernel drops the server's (robustness's
	// hostile_never_reads).
	nrBuffer = 256 << 10
)

// flooder sends one kind of frame that the server must acknowledge,
// over and over, and never reads a byte.
type flooder struct {
	kind    string
	p       *h2Peer
	sent    int64
	dropped bool // the server closed the connection
	stalled bool // a write made no progress for nrStallAfter
	// At the stall, from the kernel's table: the bytes the server's
	// socket had received and not read, and those the flooder's held,
	// written and not acknowledged; queuesErr says why they could not be
	// read.
	serverUnread, flooderQueued int
	queuesErr                   error
	after                       time.Duration
	err                         error // why the flood ended otherwise
}

// tcpStall reports whether f's stall was TCP's: the server had read
// every byte that reached its socket while the flooder's kernel still
// held bytes, waiting to send or resend them (a flooder made deaf by a
// socket filter mid-flood stalls so). A server whose reader stopped
// leaves bytes unread in its socket instead.
func (f *flooder) tcpStall() bool {
	return f.stalled && f.queuesErr == nil && f.serverUnread == 0 && f.flooderQueued > 0
}

// hostileGRPCNeverReads floods PINGs, SETTINGS, then PINGs again, one
// flooder after the other, each on its own connection demanding
// acknowledgements it never reads. Once the server's writer is blocked
// and acknowledgements pile up, its flood verdict must close the flooder
// at once, well before -write-timeout, counting calm_closes, while a
// polite client is served.
//
// With both cores busy, loopback can lose a segment while both ends'
// buffers are full, and the flooder's kernel then backs off for tens of
// seconds before it sends again: its writes stall, and the server, which
// has read every byte that reached it and written every acknowledgement
// into its socket, sees an idle connection and never reaches a verdict.
// A flooder stalled so, as the kernel's table shows (flooder.tcpStall),
// is recorded and reset by the scenario, and the flood is tried again
// on a fresh connection, up to nrTries times; a stall with bytes left
// unread in the server's socket fails it. Each kind must be dropped by
// the verdict once. In ten runs of the group under stress-ng --cpu 2,
// two stalled one flooder each, a tenth of a second into its flood; in
// one idle run two of three stalled, and in ten more runs one of thirty.
func hostileGRPCNeverReads(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{GRPC: true, WriteTimeout: nrWriteTimeout})
	polite := politeConn(t, s)
	w := t.WatchGRPC(s)

	// Each kind gets nrTries connections, dialed now; the next is used
	// only when TCP stalled the one before (see above), and those left
	// over are closed once the floods are done.
	kinds := []string{"ping", "settings", "ping2"}
	tries := map[string][]*flooder{}
	for _, k := range kinds {
		for range nrTries {
			tries[k] = append(tries[k], &flooder{kind: k, p: dialH2Buffer(t, s, nrBuffer)})
		}
	}
	var flooders []*flooder // those that flooded, in order
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		for _, k := range kinds {
			for i, f := range tries[k] {
				f.run()
				flooders = append(flooders, f)
				if !f.tcpStall() {
					for _, spare := range tries[k][i+1:] {
						spare.p.nc.Close()
					}
					break
				}
			}
		}
	}()
	t.Cleanup(func() {
		for _, k := range kinds {
			for _, f := range tries[k] {
				f.p.nc.Close()
			}
		}
		<-flooded
	})
	var during, after politeGRPC
	during.gets(t, polite, scenario.PoliteDuring)
	w.SampleDuring()
	<-flooded
	ctr := w.Settle()
	after.gets(t, polite, scenario.PoliteAfter)

	t.Field("writeTimeout", nrWriteTimeout)
	dropped, stalled := 0, 0
	try := map[string]int{}
	for _, f := range flooders {
		// A kind's second try is named ping_2, and so on.
		try[f.kind]++
		name := f.kind
		if try[f.kind] > 1 {
			name = fmt.Sprintf("%s_%d", f.kind, try[f.kind])
		}
		t.Volatile(name+"SentFrames", f.sent)
		switch {
		case f.dropped:
			dropped++
			scenario.Within(t, name+"DroppedAfter", f.after, nrDropWithin)
		case f.tcpStall():
			stalled++
			t.Volatile(name+"StalledAfter", scenario.Millis(f.after))
			t.Volatile(name+"StalledQueued", f.flooderQueued)
		case f.stalled:
			t.Check(false, "the %s flooder's writes stalled, but not by TCP: %d bytes unread in the server's socket, %d queued in the flooder's (%v)",
				f.kind, f.serverUnread, f.flooderQueued, f.queuesErr)
		default:
			t.Check(false, "the %s flooder was neither dropped nor held back by TCP: %v", f.kind, f.err)
		}
	}
	t.Volatile("stalledByTCP", stalled)
	scenario.Expectf(t, "droppedByVerdict", dropped, len(kinds), "one flooder of each kind closed by the server, in at most %d tries each", nrTries)
	scenario.Expectf(t, "calmCloses", ctr.CalmCloses, int64(dropped), "one per flooder dropped")
	scenario.Expectf(t, "writeTimeouts", ctr.WriteTimeouts, 0, "the flood verdict, not the write timeout, closed them")
	t.Field("politeDuring", &during)
	t.Field("politeAfter", &after)
	w.Report(nrRSSLimitKB)
	during.check(t, "during the floods")
	after.check(t, "after the floods")
}

// run floods until the server drops the connection, a write makes no
// progress for nrStallAfter (the scenario then resets the connection),
// the connection fails otherwise, or nrGiveUp passes.
func (f *flooder) run() {
	start := time.Now()
	defer func() { f.after = time.Since(start) }()
	for time.Since(start) < nrGiveUp {
		for range nrBatch {
			if f.kind == "settings" {
				f.p.fr.WriteSettings()
			} else {
				f.p.fr.WritePing(false, [8]byte{'r', 'p', 'c', 'b', 'e', 'n', 'c', 'h'})
			}
		}
		f.p.nc.SetWriteDeadline(time.Now().Add(nrStallAfter))
		err := f.p.bw.Flush()
		var ne net.Error
		switch {
		case scenario.IsReset(err):
			f.dropped = true
			return
		case errors.As(err, &ne) && ne.Timeout():
			f.stalled = true
			local, remote := f.p.nc.LocalAddr().(*net.TCPAddr).AddrPort(), f.p.nc.RemoteAddr().(*net.TCPAddr).AddrPort()
			var ok bool
			if _, f.serverUnread, ok, f.queuesErr = tcpQueues(remote, local); ok && f.queuesErr == nil {
				f.flooderQueued, _, ok, f.queuesErr = tcpQueues(local, remote)
			}
			if !ok && f.queuesErr == nil {
				f.queuesErr = fmt.Errorf("the connection %v-%v is not in /proc/net/tcp", local, remote)
			}
			scenario.ResetConn(f.p.nc)
			return
		case err != nil:
			f.err = err
			return
		}
		f.sent += nrBatch
	}
	f.err = fmt.Errorf("still connected after %v", nrGiveUp)
}

// tcpQueues reads, from the kernel's table /proc/net/tcp, the bytes
// queued on the IPv4 socket from local to remote, whichever process
// holds it: sent and not acknowledged (tx_queue), and received and not
// read (rx_queue). ok is false when the table does not list it.
func tcpQueues(local, remote netip.AddrPort) (tx, rx int, ok bool, err error) {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return 0, 0, false, err
	}
	// The table prints an address as the hex of its 32-bit word as this
	// machine stores it, a port as plain hex.
	addr := func(a netip.AddrPort) string {
		ip := a.Addr().As4()
		return fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32(ip[:]), a.Port())
	}
	want := [2]string{addr(local), addr(remote)}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || [2]string{f[1], f[2]} != want {
			continue
		}
		txq, rxq, _ := strings.Cut(f[4], ":")
		t, err1 := strconv.ParseUint(txq, 16, 32)
		r, err2 := strconv.ParseUint(rxq, 16, 32)
		if err := errors.Join(err1, err2); err != nil {
			return 0, 0, false, fmt.Errorf("/proc/net/tcp queues %q: %w", f[4], err)
		}
		return int(t), int(r), true, nil
	}
	return 0, 0, false, nil
}
