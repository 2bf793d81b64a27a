package cases

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
	rssLimitKB      = 64 << 10
	rssLimitTightKB = 16 << 10
)

// The well-behaved client makes politeDuring gets while an attack holds
// and politeAfter once it is over, all of politeAccount, which nobody
// debits.
const (
	politeDuring  = 20
	politeAfter   = 5
	politeAccount = "acct-polite"
)

const (
	// settleTimeout bounds how long a server may take to reap an
	// attack's connections once they are closed, and to take in an
	// attack's connections in the first place.
	settleTimeout = 5 * time.Second
	// goroutineSlack is explained at watch.settle.
	goroutineSlack = 4
)

// usage is what a server holds at one moment.
type usage struct {
	rssKB      int64 // VmRSS, -1 when unknown
	goroutines int64
	connsOpen  int64
}

// watch follows a server's memory, goroutines and connections through an
// attack: before it, while it holds, and once its connections are closed.
type watch struct {
	t                     *T
	s                     *server
	before, during, after usage
	peakKB                int64 // VmHWM once the attack is over, -1 when unknown
}

// watch records the baseline. Call it once the well-behaved client is
// connected, so that its connection belongs to the baseline.
func (t *T) watch(s *server) *watch {
	w := &watch{t: t, s: s}
	w.before, _ = w.sample()
	return w
}

func (w *watch) sample() (usage, counters) {
	ctr := w.t.counters(w.s)
	return usage{rssKB: w.kb("VmRSS"), goroutines: ctr.Goroutines, connsOpen: ctr.ConnsOpen}, ctr
}

// kb reads one memory figure of the server; -1 where /proc is missing.
func (w *watch) kb(name string) int64 {
	n, err := procStatusKB(w.s.PID, name)
	if errors.Is(err, errors.ErrUnsupported) {
		return -1
	}
	if err != nil {
		w.t.Fatalf("server memory: %v", err)
	}
	return n
}

// sampleDuring records the usage while the attack holds and returns the
// counters read with it.
func (w *watch) sampleDuring() counters {
	u, ctr := w.sample()
	w.during = u
	return ctr
}

// settle waits until the server has closed every connection of the
// attack (conns_open back to the baseline) and its goroutines are within
// goroutineSlack of the baseline, records the usage then, and returns the
// counters read with it. The slack is two connections' reader and writer:
// the control connection of an earlier poll may not be reaped yet. Not
// settling within settleTimeout is a failed check.
func (w *watch) settle() counters {
	var (
		u   usage
		ctr counters
	)
	ok := waitFor(settleTimeout, func() bool {
		u, ctr = w.sample()
		return u.connsOpen <= w.before.connsOpen && u.goroutines <= w.before.goroutines+goroutineSlack
	})
	w.after = u
	w.peakKB = w.kb("VmHWM")
	w.t.Check(ok, "server did not settle within %v: conns_open=%d goroutines=%d, want at most %d and %d",
		settleTimeout, u.connsOpen, u.goroutines, w.before.connsOpen, w.before.goroutines+goroutineSlack)
	return ctr
}

// report adds the usage as volatile fields and checks that the server's
// resident memory peaked at most limitKB above its baseline.
func (w *watch) report(limitKB int64) {
	t := w.t
	t.Volatile("rssBeforeKB", kbText(w.before.rssKB))
	t.Volatile("rssDuringKB", kbText(w.during.rssKB))
	t.Volatile("rssPeakKB", kbText(w.peakKB))
	t.Volatile("rssAfterKB", kbText(w.after.rssKB))
	t.Volatile("goroutinesBefore", w.before.goroutines)
	t.Volatile("goroutinesDuring", w.during.goroutines)
	t.Volatile("goroutinesAfter", w.after.goroutines)
	if w.before.rssKB >= 0 && w.peakKB >= 0 {
		growth := w.peakKB - w.before.rssKB
		t.Check(growth <= limitKB, "server resident memory peaked %d kB above its baseline, limit %d kB", growth, limitKB)
	}
}

func kbText(kb int64) string {
	if kb < 0 {
		return "n/a"
	}
	return strconv.FormatInt(kb, 10)
}

// awaitTakeIn waits until the server has taken in an attack, as cond on
// its counters says, and ends the scenario if it does not within
// settleTimeout: what follows would not run during the attack.
func (t *T) awaitTakeIn(s *server, what string, cond func(ctr counters) bool) {
	var ctr counters
	if !waitFor(settleTimeout, func() bool { ctr = t.counters(s); return cond(ctr) }) {
		t.Fatalf("server did not take in the attack (%s) within %v: conns_open=%d protocol_errors=%d",
			what, settleTimeout, ctr.ConnsOpen, ctr.ProtocolErrors)
	}
}

// polite tallies the gets of the well-behaved client: one connection,
// default configuration, reading politeAccount, which nobody debits.
type polite struct {
	calls, ok   int
	maxAttempts int
	slowest     time.Duration
	bad         string // the first wrong result
}

// politeClient returns the well-behaved client, connected: its first get
// has succeeded.
func (t *T) politeClient(s *server) *client.Client {
	c := t.client(s.Addr, client.DefaultConfig())
	var p polite
	if !p.add(c.Do(t.ctx, getCall(politeAccount))) {
		t.Fatalf("polite client before the attack: %s", p.bad)
	}
	return c
}

// add records r and reports whether it is correct: OK, for the right
// account, with the untouched balance.
func (p *polite) add(r client.Result) bool {
	p.calls++
	p.maxAttempts = max(p.maxAttempts, r.Attempts)
	p.slowest = max(p.slowest, r.Elapsed)
	fs := fields(r)
	if r.Status == proto.StatusOK && fs["account"] == politeAccount && fs["balance"] == strconv.Itoa(bank.DefaultBalance) {
		p.ok++
		return true
	}
	if p.bad == "" {
		p.bad = fmt.Sprintf("%v %q attempts=%d err=%v", r.Status, r.Payload, r.Attempts, r.Err)
	}
	return false
}

// gets makes n gets one after the other.
func (p *polite) gets(t *T, c *client.Client, n int) {
	for range n {
		p.add(c.Do(t.ctx, getCall(politeAccount)))
	}
}

// until makes gets through c, one after another, until stop is closed,
// and returns a channel closed when it has finished. A get counts if it
// started before stop was closed. A cleanup waits for it, should the
// scenario stop early.
func (p *polite) until(t *T, c *client.Client, stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			p.add(c.Do(t.ctx, getCall(politeAccount)))
		}
	}()
	t.cleanup(func() { <-done })
	return done
}

// String renders the tally as correct/made, e.g. "20/20".
func (p *polite) String() string { return fmt.Sprintf("%d/%d", p.ok, p.calls) }

// check records a failure unless at least one get was made and all were
// correct.
func (p *polite) check(t *T, when string) {
	t.Check(p.calls > 0 && p.ok == p.calls, "polite client %s: %d of %d gets correct; first wrong: %s", when, p.ok, p.calls, p.bad)
}

// limits are the server limits a robustness scenario sets that
// serverOpts has no field for; 0 leaves the server's default.
type limits struct {
	maxConns     int // -max-conns
	queuePerConn int // -queue-per-conn
}

// startServerLimits is startServer with the limits l as well.
func (t *T) startServerLimits(o serverOpts, l limits) *server {
	var extra []string
	if l.maxConns > 0 {
		extra = append(extra, "-"+serverapi.FlagMaxConns, strconv.Itoa(l.maxConns))
	}
	if l.queuePerConn > 0 {
		extra = append(extra, "-"+serverapi.FlagQueuePerConn, strconv.Itoa(l.queuePerConn))
	}
	s := t.spawnServer(o, extra)
	if err := s.Await(t.ctx, o.StartDelay+serverproc.StartTimeout); err != nil {
		t.Fatalf("start rpcserver: %v", err)
	}
	return s
}
