package deploy

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/dnszone"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// deployLBScenarios lists the deploy group's load balancing and name
// resolution scenarios in run order.
func deployLBScenarios() []scenario.Case {
	g := func(name, doc string, run func(*scenario.T)) scenario.Case {
		return scenario.Case{Name: name, Group: Group, Doc: doc, Body: run}
	}
	return []scenario.Case{
		g("lb_avoids_slow_instance", "three servers, one sleeping 50ms before every get; a round_robin and a p2c client side by side, 4 callers each: by the servers' own logs p2c sends the slow one well under a third of its gets and its p90 stays under the delay, while round_robin sends it a third and its p90 is the delay", lbAvoidsSlowInstance),
		g("warmup_ramps_new_instance", "p2c over three servers with a 2s warm-up, 8 callers of 5ms gets; one server is killed and restarted on its address: by the servers' logs its share of gets in the four 500ms windows after the client's new connection rises from well under a third, not in one step", warmupRampsNewInstance),
		g("dns_outage_keeps_snapshot", "a p2c client finds two servers through SRV records on a DNS server on loopback; the DNS server stops: calls keep reaching both (0 failures) while resolutions fail and are counted; it returns with one replaced: the new server gets calls, by its own log, and the dropped one none once its connection closed", dnsOutageKeepsSnapshot),
	}
}

// untraced is the Trace of the load scenarios' clients: their thousands
// of calls would make megabytes of trace and a timeline nobody can read,
// and what they judge is in the servers' logs.
func untraced(*client.Call, []client.Attempt, []client.Span) {}

// shareWithin records got, a share in [0,1], as the volatile key~= with
// two decimals, and lo and hi as its bounds (a negative one is absent),
// and fails the scenario, saying why, unless lo <= got <= hi.
func shareWithin(t *scenario.T, key string, got, lo, hi float64, why string) bool {
	t.Volatile(key, fmt.Sprintf("%.2f", got))
	if lo >= 0 {
		t.Fields = append(t.Fields, report.Field{Key: key, Value: fmt.Sprintf("%.2f", lo), Kind: report.LowerBound})
	}
	if hi >= 0 {
		t.Fields = append(t.Fields, report.Field{Key: key, Value: fmt.Sprintf("%.2f", hi), Kind: report.Bound})
	}
	switch {
	case lo >= 0 && got < lo:
		t.Failures = append(t.Failures, fmt.Sprintf("%s=%.2f, want at least %.2f: %s", key, got, lo, why))
		return false
	case hi >= 0 && got > hi:
		t.Failures = append(t.Failures, fmt.Sprintf("%s=%.2f, want at most %.2f: %s", key, got, hi, why))
		return false
	}
	return true
}

// load is callers goroutines each making call, one after another, until
// it is stopped.
type load struct {
	wg       sync.WaitGroup
	stop     chan struct{}
	stopOnce sync.Once
	// mu guards lat and failed.
	mu     sync.Mutex
	lat    []time.Duration
	failed []client.Result
}

func startLoad(t *scenario.T, c *client.Client, callers int, call client.Call) *load {
	l := &load{stop: make(chan struct{})}
	stop := l.stop
	for range callers {
		l.wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-t.Ctx.Done():
					return
				default:
				}
				r := c.Do(t.Ctx, call)
				l.mu.Lock()
				l.lat = append(l.lat, r.Elapsed)
				if r.Status != proto.StatusOK {
					l.failed = append(l.failed, r)
				}
				l.mu.Unlock()
			}
		})
	}
	t.Cleanup(func() { l.wait() })
	return l
}

// wait stops the callers, waits for them, and returns the calls'
// latencies, sorted, and those that did not end OK.
func (l *load) wait() ([]time.Duration, []client.Result) {
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
	slices.Sort(l.lat)
	return l.lat, l.failed
}

// firstFailure describes the first of failed, for a failure's message.
func firstFailure(failed []client.Result) string {
	if len(failed) == 0 {
		return "none"
	}
	return failed[0].Status.String() + ": " + scenario.AttemptLog(failed[0])
}

// quantile returns the q-quantile of sorted latencies.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// execs returns the times of the OK gets of account that s's log records
// as executed.
func execs(t *scenario.T, s *scenario.Server, account string) []time.Time {
	var out []time.Time
	for _, e := range t.Events(s) {
		if e.Name == serverapi.EventExec && e.Text(serverapi.KeyMethod) == bank.MethodGet &&
			e.Text(serverapi.KeyAccount) == account && e.Text(serverapi.KeyStatus) == "OK" {
			out = append(out, e.Time)
		}
	}
	return out
}

// The servers and load of lb_avoids_slow_instance.
const (
	lbSlowDelay = 50 * time.Millisecond
	lbCallers   = 4
	lbRun       = 2 * time.Second
	// lbP2CMaxShare bounds p2c's share to the slow server; round robin
	// gives it a third, and an earlier run of p2c 0.04-0.05.
	lbP2CMaxShare = 0.15
)

func lbAvoidsSlowInstance(t *scenario.T) {
	var srvs []*scenario.Server
	var addrs []string
	for i := range 3 {
		o := scenario.ServerOpts{Workers: 16}
		if i == 2 {
			o.Faults = []string{fmt.Sprintf("kind=sleep method=get delay=%v", lbSlowDelay)}
		}
		s := t.StartServer(o)
		srvs, addrs = append(srvs, s), append(addrs, s.Addr)
	}
	t.Field("slowDelay", scenario.Millis(lbSlowDelay))
	t.Field("callers", lbCallers)
	loads := map[client.Balancer]*load{}
	for _, b := range []client.Balancer{client.RoundRobin, client.P2C} {
		cfg := client.DefaultConfig()
		cfg.Balancer, cfg.Trace = b, untraced
		c := t.MultiClient(addrs, cfg)
		call := scenario.GetCall("acct-LB-" + string(b))
		// A millisecond per get on every server keeps the logs small.
		call.Payload = append(call.Payload, " sleep=1"...)
		loads[b] = startLoad(t, c, lbCallers, call)
	}
	time.Sleep(lbRun) // the length of the run, not a wait for an event
	for _, b := range []client.Balancer{client.RoundRobin, client.P2C} {
		lat, failed := loads[b].wait()
		key := map[client.Balancer]string{client.RoundRobin: "rr", client.P2C: "p2c"}[b]
		scenario.Expectf(t, key+"Failed", len(failed), 0, "first: %s", firstFailure(failed))
		counts := make([]int, 3)
		total := 0
		for i, s := range srvs {
			counts[i] = len(execs(t, s, "acct-LB-"+string(b)))
			total += counts[i]
		}
		t.Volatile(key+"Execs", fmt.Sprintf("%d/%d/%d", counts[0], counts[1], counts[2]))
		if total == 0 {
			t.Fatalf("%s: no get executed", b)
		}
		share := float64(counts[2]) / float64(total)
		p90 := quantile(lat, 0.9)
		if b == client.P2C {
			shareWithin(t, "p2cSlowShare", share, -1, lbP2CMaxShare, "p2c must send the slow instance well under a third")
			scenario.Within(t, "p2cP90", p90, lbSlowDelay)
		} else {
			shareWithin(t, "rrSlowShare", share, 0.3, 0.37, "round robin sends every instance a third")
			scenario.Between(t, "rrP90", p90, lbSlowDelay, -1)
		}
	}
}

// The run of warmup_ramps_new_instance.
const (
	warmUp      = 2 * time.Second
	warmWindows = 4
	warmWindow  = warmUp / warmWindows
	warmCallers = 8
	// warmGetSleep keeps calls in flight on every server, so that p2c's
	// score, in flight over weight, has something to weigh.
	warmGetSleep = 5
	// warmFirstMax bounds the restarted server's share in the first
	// window: the full share at once would be a third; an earlier run saw
	// 0.02.
	warmFirstMax = 0.15
	// warmLastMin is the least share in the last window, ramped in: an
	// earlier run saw 0.40.
	warmLastMin = 0.2
)

func warmupRampsNewInstance(t *scenario.T) {
	var srvs []*scenario.Server
	var addrs []string
	for range 3 {
		s := t.StartServer(scenario.ServerOpts{Workers: 16})
		srvs, addrs = append(srvs, s), append(addrs, s.Addr)
	}
	cfg := client.DefaultConfig()
	cfg.Balancer, cfg.WarmUp, cfg.Trace = client.P2C, warmUp, untraced
	c := t.MultiClient(addrs, cfg)
	t.Field("warmUp", scenario.Millis(warmUp))
	t.Field("windows", fmt.Sprintf("%dx%s", warmWindows, scenario.Millis(warmWindow)))
	call := scenario.GetCall("acct-WU")
	call.Payload = fmt.Appendf(call.Payload, " sleep=%d", warmGetSleep)
	l := startLoad(t, c, warmCallers, call)
	// The three first connections warm up together; the restart is to
	// meet servers at full weight.
	time.Sleep(warmUp)

	old := srvs[2]
	if err := old.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	<-old.Exited()
	s := t.StartServer(scenario.ServerOpts{Workers: 16, Addr: old.Addr})
	srvs[2] = s
	var t0 time.Time
	if !scenario.WaitFor(10*time.Second, func() bool {
		for _, e := range t.Events(s) {
			if e.Name == serverapi.EventConnOpen {
				t0 = e.Time
				return true
			}
		}
		return false
	}) {
		t.Fatalf("the client never connected to the restarted server")
	}
	time.Sleep(time.Until(t0.Add(warmUp + warmWindow/5))) // the windows' length
	_, failed := l.wait()
	scenario.Expectf(t, "failed", len(failed), 0, "first: %s", firstFailure(failed))

	var counts [3][warmWindows]int
	for i, sv := range srvs {
		for _, at := range execs(t, sv, "acct-WU") {
			if w := int(at.Sub(t0) / warmWindow); at.After(t0) && w < warmWindows {
				counts[i][w]++
			}
		}
	}
	shares := make([]float64, warmWindows)
	for w := range warmWindows {
		total := counts[0][w] + counts[1][w] + counts[2][w]
		if total == 0 {
			t.Fatalf("window %d: no get executed", w+1)
		}
		shares[w] = float64(counts[2][w]) / float64(total)
	}
	key := func(w int) string { return "share" + strconv.Itoa(w+1) }
	shareWithin(t, key(0), shares[0], -1, warmFirstMax, "a restarted instance must not get its full share at once")
	for w := 1; w < warmWindows-1; w++ {
		t.Volatile(key(w), fmt.Sprintf("%.2f", shares[w]))
	}
	shareWithin(t, key(warmWindows-1), shares[warmWindows-1], warmLastMin, -1, "the restarted instance must be ramped in by the end of the warm-up")
	// Monotone-ish: each window's share exceeds that of two windows
	// before, a ramp of 0.45 in weight apart.
	rising := true
	for w := 2; w < warmWindows; w++ {
		rising = rising && shares[w] > shares[w-2]
	}
	scenario.Expectf(t, "rising", rising, true, "shares %.2f", shares)
}

// The zone and timing of dns_outage_keeps_snapshot.
const (
	dnsZone    = "rpcbench.test"
	dnsService = "_rpc._tcp.bank." + dnsZone + "."
	dnsEvery   = 100 * time.Millisecond
	dnsPhase   = 700 * time.Millisecond
	// dnsTimeout bounds a resolution. A stopped server's closed port is
	// usually refused at once, but not always: when the kernel sends no
	// ICMP port unreachable (it rate-limits them) a query waits for the
	// timeout, as it would for a host that is down.
	dnsTimeout = 250 * time.Millisecond
	dnsOutage  = 1500 * time.Millisecond
	// dnsMinFailures is the fewest failed resolutions in an outage of
	// dnsOutage on a loaded machine, each failure taking up to dnsTimeout.
	dnsMinFailures = 3
)

// publishSRV sets the zone's SRV records to srvs, each at a target of
// its own resolving to 127.0.0.1.
func publishSRV(t *scenario.T, z *dnszone.Server, srvs ...*scenario.Server) {
	var rrs []dnszone.SRV
	for _, s := range srvs {
		ap, err := netip.ParseAddrPort(s.Addr)
		if err != nil {
			t.Fatalf("server address %q: %v", s.Addr, err)
		}
		target := "i" + strconv.Itoa(int(ap.Port())) + "." + dnsZone + "."
		if err := z.SetHost(target, ap.Addr()); err != nil {
			t.Fatalf("%v", err)
		}
		rrs = append(rrs, dnszone.SRV{Target: target, Port: ap.Port()})
	}
	if err := z.SetSRV(dnsService, rrs...); err != nil {
		t.Fatalf("%v", err)
	}
}

// connsClosed reports whether every connection s's log opened has closed.
func connsClosed(t *scenario.T, s *scenario.Server) bool {
	evs := t.Events(s)
	opened := scenario.CountEvents(evs, func(e serverapi.Event) bool { return e.Name == serverapi.EventConnOpen })
	closed := scenario.CountEvents(evs, func(e serverapi.Event) bool { return e.Name == serverapi.EventConnClosed })
	return opened > 0 && opened == closed
}

func dnsOutageKeepsSnapshot(t *scenario.T) {
	a, b, n := t.StartServer(scenario.ServerOpts{}), t.StartServer(scenario.ServerOpts{}), t.StartServer(scenario.ServerOpts{})
	z, err := dnszone.Start(dnsZone)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { z.Stop() })
	publishSRV(t, z, a, b)

	cfg := client.DefaultConfig()
	cfg.Balancer, cfg.Trace = client.P2C, untraced
	c, err := client.NewDNS(client.DNS{Name: dnsService, Server: z.Addr(), Every: dnsEvery, Timeout: dnsTimeout}, cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	t.Field("resolveEvery", scenario.Millis(dnsEvery))
	t.Field("outage", scenario.Millis(dnsOutage))
	scenario.Expect(t, "instances", len(c.Addrs()), 2)

	const acct = "acct-DNS"
	call := scenario.GetCall(acct)
	call.Payload = append(call.Payload, " sleep=1"...) // keeps the logs small
	l := startLoad(t, c, 2, call)
	time.Sleep(dnsPhase) // calls before the outage

	if err := z.Stop(); err != nil {
		t.Fatalf("%v", err)
	}
	outage := time.Now()
	before := c.Stats().ResolveFailures
	time.Sleep(dnsOutage) // the outage's length
	st := c.Stats()
	scenario.AtLeast(t, "outageResolveFailures", st.ResolveFailures-before, dnsMinFailures, "the client resolves on, and counts each failure")
	scenario.Expect(t, "outageInstances", len(c.Addrs()), 2)

	publishSRV(t, z, a, n) // b is replaced by n
	if err := z.Restart(); err != nil {
		t.Fatalf("%v", err)
	}
	back := time.Now()
	if !scenario.WaitFor(10*time.Second, func() bool { return slices.Contains(c.Addrs(), n.Addr) }) {
		t.Fatalf("the client never resolved the changed set: %v", c.Addrs())
	}
	// The dropped server's connection closes once its calls are
	// answered; from then on it can get none.
	if !scenario.WaitFor(10*time.Second, func() bool { return connsClosed(t, b) }) {
		t.Fatalf("the dropped server's connection never closed")
	}
	droppedBefore := len(execs(t, b, acct))
	time.Sleep(dnsPhase) // calls after the change
	_, failed := l.wait()
	scenario.Expectf(t, "failed", len(failed), 0, "first: %s", firstFailure(failed))

	during := func(s *scenario.Server) int {
		k := 0
		for _, at := range execs(t, s, acct) {
			if at.After(outage) && at.Before(back) {
				k++
			}
		}
		return k
	}
	scenario.AtLeast(t, "outageExecsA", during(a), 1, "calls keep reaching the last known instances")
	scenario.AtLeast(t, "outageExecsB", during(b), 1, "calls keep reaching the last known instances")
	scenario.AtLeast(t, "newInstanceExecs", len(execs(t, n, acct)), 1, "the instance added when DNS returned gets calls")
	scenario.Expectf(t, "droppedExecsAfter", len(execs(t, b, acct))-droppedBefore, 0, "the dropped instance gets no call once its connection closed")
}
