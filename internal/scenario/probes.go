package scenario

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/serverproc"
)

// Resident memory an attack may add to the server between its baseline
// and its peak. Both are far above what the server needs under these
// attacks (a few MiB) and far below what it would take without its limits
// (2 GiB for a trusted length prefix, no bound for a peer that never
// reads).
const (
	RSSLimitKB      = 64 << 10
	RSSLimitTightKB = 16 << 10
)

// The well-behaved client makes PoliteDuring gets while an attack holds
// and PoliteAfter once it is over, all of politeAccount, which nobody
// debits.
const (
	PoliteDuring  = 20
	PoliteAfter   = 5
	politeAccount = "acct-polite"
)

// GoroutineSlack is explained at Watch.Settle.
const GoroutineSlack = 4

// usage is what a server holds at one moment.
type usage struct {
	rssKB      int64 // VmRSS, -1 when unknown
	Goroutines int64
	ConnsOpen  int64
}

// Watch follows a server's memory, goroutines and connections through an
// attack: before it, while it holds, and once its connections are closed.
type Watch struct {
	t                     *T
	s                     *Server
	Before, During, after usage
	peakKB                int64 // VmHWM once the attack is over, -1 when unknown
	// grpc: the server serves gRPC too; its connections count as open,
	// and the counters returned are the gRPC side's.
	grpc bool
}

// Watch records the baseline. Call it once the well-behaved client is
// connected, so that its connection belongs to the baseline.
func (t *T) Watch(s *Server) *Watch {
	w := &Watch{t: t, s: s}
	w.Before, _ = w.sample()
	return w
}

// WatchGRPC is Watch for a server started with -grpc: a connection open
// on either wire counts as open, and SampleDuring and Settle return the
// gRPC side's counters.
func (t *T) WatchGRPC(s *Server) *Watch {
	w := &Watch{t: t, s: s, grpc: true}
	w.Before, _ = w.sample()
	return w
}

func (w *Watch) sample() (usage, Counters) {
	ctr := w.t.Counters(w.s)
	u := usage{rssKB: w.KB("VmRSS"), Goroutines: ctr.Goroutines, ConnsOpen: ctr.ConnsOpen}
	if w.grpc {
		g := w.t.GRPCCounters(w.s)
		u.ConnsOpen += g.ConnsOpen
		ctr = Counters{Counters: g, ConnsScenario: g.ConnsAccepted}
	}
	return u, ctr
}

// KB reads one memory figure of the server; -1 where /proc is missing.
func (w *Watch) KB(name string) int64 {
	n, err := procStatusKB(w.s.PID, name)
	if errors.Is(err, errors.ErrUnsupported) {
		return -1
	}
	if err != nil {
		w.t.Fatalf("server memory: %v", err)
	}
	return n
}

// SampleDuring records the usage while the attack holds and returns the
// counters read with it.
func (w *Watch) SampleDuring() Counters {
	u, ctr := w.sample()
	w.During = u
	return ctr
}

// SampleMemoryDuring records the server's resident memory while the
// attack holds, for a scenario that can make no control call then (its
// connection would be turned away): goroutines and connections during
// are recorded as unknown, -1.
func (w *Watch) SampleMemoryDuring() {
	w.During = usage{rssKB: w.KB("VmRSS"), Goroutines: -1, ConnsOpen: -1}
}

// Settle waits until the server has closed every connection of the
// attack (conns_open back to the baseline) and its goroutines are within
// GoroutineSlack of the baseline, records the usage then, and returns the
// counters read with it. The slack is two connections' reader and writer:
// the control connection of an earlier poll may not be reaped yet. Not
// settling within SettleTimeout is a failed check.
func (w *Watch) Settle() Counters {
	var (
		u   usage
		ctr Counters
	)
	ok := WaitFor(SettleTimeout, func() bool {
		u, ctr = w.sample()
		return u.ConnsOpen <= w.Before.ConnsOpen && u.Goroutines <= w.Before.Goroutines+GoroutineSlack
	})
	w.after = u
	w.peakKB = w.KB("VmHWM")
	w.t.Check(ok, "server did not settle within %v: conns_open=%d goroutines=%d, want at most %d and %d",
		SettleTimeout, u.ConnsOpen, u.Goroutines, w.Before.ConnsOpen, w.Before.Goroutines+GoroutineSlack)
	return ctr
}

// Report adds the usage as volatile fields and checks that the server's
// resident memory peaked at most limitKB above its baseline.
func (w *Watch) Report(limitKB int64) {
	t := w.t
	t.Volatile("rssBeforeKB", kbText(w.Before.rssKB))
	t.Volatile("rssDuringKB", kbText(w.During.rssKB))
	t.Volatile("rssPeakKB", kbText(w.peakKB))
	t.Volatile("rssAfterKB", kbText(w.after.rssKB))
	t.Volatile("goroutinesBefore", w.Before.Goroutines)
	t.Volatile("goroutinesDuring", w.During.Goroutines)
	t.Volatile("goroutinesAfter", w.after.Goroutines)
	if w.Before.rssKB >= 0 && w.peakKB >= 0 {
		growth := w.peakKB - w.Before.rssKB
		t.Check(growth <= limitKB, "server resident memory peaked %d kB above its baseline, limit %d kB", growth, limitKB)
	}
}

func kbText(kb int64) string {
	if kb < 0 {
		return "n/a"
	}
	return strconv.FormatInt(kb, 10)
}

// AwaitTakeIn waits until the server has taken in an attack, as cond on
// its counters says, and ends the scenario if it does not within
// SettleTimeout: what follows would not run during the attack.
func (t *T) AwaitTakeIn(s *Server, what string, cond func(ctr Counters) bool) {
	var ctr Counters
	if !WaitFor(SettleTimeout, func() bool { ctr = t.Counters(s); return cond(ctr) }) {
		t.Fatalf("server did not take in the attack (%s) within %v: conns_open=%d protocol_errors=%d",
			what, SettleTimeout, ctr.ConnsOpen, ctr.ProtocolErrors)
	}
}

// Polite tallies the gets of the well-behaved client: one connection,
// default configuration, reading politeAccount, which nobody debits.
type Polite struct {
	Calls, OK   int
	MaxAttempts int
	Slowest     time.Duration
	bad         string // the first wrong result
}

// PoliteClient returns the well-behaved client, connected: its first get
// has succeeded.
func (t *T) PoliteClient(s *Server) *client.Client {
	c := t.Client(s.Addr, client.DefaultConfig())
	var p Polite
	if !p.add(c.Do(t.Ctx, GetCall(politeAccount))) {
		t.Fatalf("polite client before the attack: %s", p.bad)
	}
	return c
}

// add records r and reports whether it is correct: OK, for the right
// account, with the untouched balance.
func (p *Polite) add(r client.Result) bool {
	p.Calls++
	p.MaxAttempts = max(p.MaxAttempts, r.Attempts)
	p.Slowest = max(p.Slowest, r.Elapsed)
	fs := PayloadFields(r)
	if r.Status == proto.StatusOK && fs["account"] == politeAccount && fs["balance"] == strconv.Itoa(bank.DefaultBalance) {
		p.OK++
		return true
	}
	if p.bad == "" {
		p.bad = fmt.Sprintf("%v %q attempts=%d err=%v", r.Status, r.Payload, r.Attempts, r.Err)
	}
	return false
}

// Gets makes n gets one after the other.
func (p *Polite) Gets(t *T, c *client.Client, n int) {
	for range n {
		p.add(c.Do(t.Ctx, GetCall(politeAccount)))
	}
}

// Until makes gets through c, one after another, until stop is closed,
// and returns a channel closed when it has finished. A get counts if it
// started before stop was closed. A cleanup waits for it, should the
// scenario stop early.
func (p *Polite) Until(t *T, c *client.Client, stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			p.add(c.Do(t.Ctx, GetCall(politeAccount)))
		}
	}()
	t.Cleanup(func() { <-done })
	return done
}

// String renders the tally as correct/made, e.g. "20/20".
func (p *Polite) String() string { return fmt.Sprintf("%d/%d", p.OK, p.Calls) }

// Check records a failure unless at least one get was made and all were
// correct.
func (p *Polite) Check(t *T, when string) {
	t.Check(p.Calls > 0 && p.OK == p.Calls, "polite client %s: %d of %d gets correct; first wrong: %s", when, p.OK, p.Calls, p.bad)
}

// Limits are the server limits a robustness scenario sets that
// ServerOpts has no field for; 0 leaves the server's default.
type Limits struct {
	MaxConns     int // -max-conns, on each wire
	QueuePerConn int // -queue-per-conn
	// GRPCMaxStreams is -grpc-max-streams: the gRPC side's
	// SETTINGS_MAX_CONCURRENT_STREAMS.
	GRPCMaxStreams int
	// MaxOutTotal is -max-out-total: answer bytes queued and not yet
	// written across the gRPC side's connections.
	MaxOutTotal int
	// ReadTimeout is -read-timeout: how long a connection may take to
	// finish a preface, frame or header block it started.
	ReadTimeout time.Duration
	// KeepAlive is -keepalive: the TCP keepalive idle time.
	KeepAlive time.Duration
}

// args returns l as rpcserver flags.
func (l Limits) args() []string {
	var out []string
	add := func(name string, v string) { out = append(out, "-"+name, v) }
	if l.MaxConns > 0 {
		add(serverapi.FlagMaxConns, strconv.Itoa(l.MaxConns))
	}
	if l.QueuePerConn > 0 {
		add(serverapi.FlagQueuePerConn, strconv.Itoa(l.QueuePerConn))
	}
	if l.GRPCMaxStreams > 0 {
		add(serverapi.FlagGRPCMaxStreams, strconv.Itoa(l.GRPCMaxStreams))
	}
	if l.MaxOutTotal > 0 {
		add(serverapi.FlagMaxOutTotal, strconv.Itoa(l.MaxOutTotal))
	}
	if l.ReadTimeout > 0 {
		add(serverapi.FlagReadTimeout, l.ReadTimeout.String())
	}
	if l.KeepAlive > 0 {
		add(serverapi.FlagKeepAlive, l.KeepAlive.String())
	}
	return out
}

// StartServerLimits is StartServer with the limits l as well.
func (t *T) StartServerLimits(o ServerOpts, l Limits) *Server {
	s := t.spawnServer(o, l.args())
	if err := s.Await(t.Ctx, o.StartDelay+serverproc.StartTimeout); err != nil {
		t.Fatalf("start rpcserver: %v", err)
	}
	return s
}
