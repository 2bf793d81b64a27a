package deploy

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/dnszone"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// Shape of the rolling restarts.
const (
	rollingServers = 3
	rollingCallers = 8
	// rollingDebitMs is how long each debit runs in the handler: long
	// enough that every drain and every kill meets debits in flight.
	rollingDebitMs = 100
	// rollingDrainTimeout bounds each drain; the debits it waits for
	// take rollingDebitMs.
	rollingDrainTimeout = 2 * time.Second
	// rollingSRV is the service's SRV name in the test zone.
	rollingSRV = "_bank._tcp.deploy.test."
)

// rollingOp is one call of the rolling restart's background callers.
type rollingOp struct {
	kind    string // "get", "debit" (keyless) or "keyed"
	account string
	key     string
	r       client.Result
}

// rolling is a fleet of rpcservers on one store found through a DNS
// zone, and the callers that use it through a p2c client for as long
// as the restart lasts.
type rolling struct {
	t     *scenario.T
	store string
	zone  *dnszone.Server
	addrs []string
	// servers are every incarnation of every instance, for their logs.
	servers []*scenario.Server
	live    []*scenario.Server // the running incarnation of each instance
	c       *client.Client

	mu  sync.Mutex // guards ops
	ops []rollingOp
	wg  sync.WaitGroup
	// stop ends the callers.
	stop chan struct{}
}

func startRolling(t *scenario.T, kind string) *rolling {
	rl := &rolling{t: t, store: t.NewStore(kind), stop: make(chan struct{})}
	z, err := dnszone.Start("deploy.test.")
	if err != nil {
		t.Fatalf("dns: %v", err)
	}
	t.Cleanup(func() { z.Stop() })
	rl.zone = z
	for range rollingServers {
		s := rl.start("")
		rl.addrs = append(rl.addrs, s.Addr)
		rl.live = append(rl.live, s)
	}
	for i, a := range rl.addrs {
		host, _, _ := net.SplitHostPort(a)
		if err := z.SetHost(rl.host(i), netip.MustParseAddr(host)); err != nil {
			t.Fatalf("dns: %v", err)
		}
	}
	rl.register(-1)
	cfg := deployConfig(t)
	cfg.Balancer = client.P2C
	c, err := client.NewDNS(client.DNS{Name: rollingSRV, Server: z.Addr(), Every: 100 * time.Millisecond}, cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	rl.c = c
	for g := range rollingCallers {
		rl.wg.Go(func() { rl.caller(g) })
	}
	t.Cleanup(rl.stopCallers)
	return rl
}

// start starts an instance on addr ("" for a new one).
func (rl *rolling) start(addr string) *scenario.Server {
	s := rl.t.StartServer(scenario.ServerOpts{Addr: addr, Store: rl.store, DrainTimeout: rollingDrainTimeout})
	rl.servers = append(rl.servers, s)
	return s
}

func (rl *rolling) host(i int) string { return fmt.Sprintf("s%d.deploy.test.", i+1) }

// register serves the SRV records of every instance but skip (-1: none),
// and waits until the client has asked the zone again since.
func (rl *rolling) register(skip int) {
	var srvs []dnszone.SRV
	for i, a := range rl.addrs {
		if i == skip {
			continue
		}
		_, port, _ := net.SplitHostPort(a)
		p, _ := strconv.Atoi(port)
		srvs = append(srvs, dnszone.SRV{Target: rl.host(i), Port: uint16(p)})
	}
	if err := rl.zone.SetSRV(rollingSRV, srvs...); err != nil {
		rl.t.Fatalf("dns: %v", err)
	}
	if rl.c == nil {
		return
	}
	var want []string
	for i, a := range rl.addrs {
		if i != skip {
			want = append(want, a)
		}
	}
	slices.Sort(want)
	if !scenario.WaitFor(scenario.SettleTimeout, func() bool {
		got := rl.c.Addrs()
		slices.Sort(got)
		return slices.Equal(got, want)
	}) {
		rl.t.Fatalf("the client's addresses are %v %v after the zone changed, want %v", rl.c.Addrs(), scenario.SettleTimeout, want)
	}
}

// caller makes gets, keyless debits and keyed debits of its own account
// in turn until stopped.
func (rl *rolling) caller(g int) {
	account := fmt.Sprintf("acct-R%d", g)
	for n := 0; ; n++ {
		select {
		case <-rl.stop:
			return
		default:
		}
		op := rollingOp{account: account}
		var call client.Call
		switch n % 3 {
		case 0:
			op.kind, call = "get", scenario.GetCall(account)
		case 1:
			op.kind, call = "debit", scenario.DebitCall(account, 10, "")
		default:
			op.kind, op.key = "keyed", fmt.Sprintf("k-%d-%d", g, n)
			call = scenario.DebitCall(account, 10, op.key)
		}
		if op.kind != "get" {
			call.Payload = fmt.Appendf(call.Payload, " sleep=%d", rollingDebitMs)
		}
		op.r = rl.c.Do(rl.t.Ctx, call)
		rl.mu.Lock()
		rl.ops = append(rl.ops, op)
		rl.mu.Unlock()
	}
}

func (rl *rolling) stopCallers() {
	select {
	case <-rl.stop:
	default:
		close(rl.stop)
	}
	rl.wg.Wait()
}

// awaitServed waits until s has executed a request of the callers: a
// restarted instance is back in service.
func (rl *rolling) awaitServed(s *scenario.Server) {
	rl.t.AwaitEvent(s, "a call served by the restarted instance", func(e serverapi.Event) bool {
		return e.Name == serverapi.EventExec
	})
}

// rollingTally is what the callers saw and the servers' logs recorded.
type rollingTally struct {
	calls, failed, unknownKeyless, unknownKeyed int
	// keysTwice are keyed debits executed more than once; okUnexecuted
	// debits answered OK the logs show never executed.
	keysTwice, okUnexecuted int
	// okDebits are the debits answered OK, by account; execs the debits
	// the logs show executed (a replay is not an execution).
	okDebits, execs map[string]int
}

func (rl *rolling) tally() rollingTally {
	t := rl.t
	tl := rollingTally{okDebits: map[string]int{}, execs: map[string]int{}}
	byKey := map[string]int{}
	for _, s := range rl.servers {
		for _, e := range t.Events(s) {
			if e.Name != serverapi.EventExec || e.Text(serverapi.KeyMethod) != bank.MethodDebit || e.Text(serverapi.KeyStatus) != proto.StatusOK.String() {
				continue
			}
			tl.execs[e.Text(serverapi.KeyAccount)]++
			if k := e.Text(serverapi.KeyKey); k != "" {
				byKey[k]++
			}
		}
	}
	for _, op := range rl.ops {
		tl.calls++
		ok := op.r.Status == proto.StatusOK
		switch {
		case !ok && op.r.Status == proto.StatusUnknown && op.kind == "debit":
			tl.unknownKeyless++
		case !ok && op.r.Status == proto.StatusUnknown && op.kind == "keyed":
			tl.unknownKeyed++
		}
		if !ok {
			tl.failed++
		}
		if ok && op.kind != "get" {
			tl.okDebits[op.account]++
		}
		if op.kind == "keyed" {
			switch n := byKey[op.key]; {
			case n > 1:
				tl.keysTwice++
			case ok && n == 0:
				tl.okUnexecuted++
			}
		}
	}
	return tl
}

// rollingRestartZeroFailures replaces each of three instances in turn
// (out of DNS, drained by SIGTERM, started again on its address, back in
// DNS, serving again) while the callers run: no call may fail, no keyless
// debit be UNKNOWN, no key execute twice, and every account's balance is
// its start less the debits answered OK, which are the debits the logs
// show executed.
func rollingRestartZeroFailures(t *scenario.T, kind string) {
	rl := startRolling(t, kind)
	for i := range rollingServers {
		rl.awaitServed(rl.live[i])
		rl.register(i)
		s := rl.live[i]
		if err := s.Terminate(); err != nil {
			t.Fatalf("drain: %v", err)
		}
		t.Check(awaitExit(t, s, rollingDrainTimeout+5*time.Second) == "", "instance %d did not exit 0 after its drain", i+1)
		rl.live[i] = rl.start(rl.addrs[i])
		rl.register(-1)
	}
	rl.awaitServed(rl.live[rollingServers-1])
	rl.stopCallers()
	tl := rl.tally()
	t.Field("instances", rollingServers)
	t.Field("restarts", rollingServers)
	t.Volatile("calls", tl.calls)
	scenario.Expect(t, "failed", tl.failed, 0)
	scenario.Expect(t, "unknownKeyless", tl.unknownKeyless, 0)
	scenario.Expect(t, "keysTwice", tl.keysTwice, 0)
	scenario.Expect(t, "okUnexecuted", tl.okUnexecuted, 0)
	st := rl.c.Stats()
	t.Volatile("drains", st.Drains)
	t.Volatile("drainedResent", st.DrainedResent)
	rl.balancesAddUp(tl)
}

// balancesAddUp checks every caller's account: its balance is its start
// less 10 per debit answered OK, and the logs executed exactly those.
func (rl *rolling) balancesAddUp(tl rollingTally) {
	t := rl.t
	wrong := 0
	for g := range rollingCallers {
		account := fmt.Sprintf("acct-R%d", g)
		b := t.Balance(rl.live[0], account)
		if b != bank.DefaultBalance-10*int64(tl.okDebits[account]) || tl.execs[account] != tl.okDebits[account] {
			wrong++
			t.Check(false, "%s: balance %d after %d debits answered OK and %d executed, want %d", account, b, tl.okDebits[account], tl.execs[account], bank.DefaultBalance-10*int64(tl.okDebits[account]))
		}
	}
	t.Field("balancesAddUp", wrong == 0)
}

// negativeControlKillWithoutDrain is the same restart with SIGKILL, and
// no notice: a crash takes no instance out of DNS first. Keyless debits
// in flight on a killed instance end UNKNOWN, their fate unknown to the
// client; the control passes only when some do.
func negativeControlKillWithoutDrain(t *scenario.T, kind string) {
	rl := startRolling(t, kind)
	for i := range rollingServers {
		rl.awaitServed(rl.live[i])
		t.KillServer(rl.live[i])
		rl.live[i] = rl.start(rl.addrs[i])
	}
	rl.awaitServed(rl.live[rollingServers-1])
	rl.stopCallers()
	tl := rl.tally()
	t.Field("expectUnknown", true)
	t.Field("restarts", rollingServers)
	t.Volatile("calls", tl.calls)
	t.Volatile("failed", tl.failed)
	scenario.AtLeast(t, "unknownKeyless", tl.unknownKeyless, 1, "no keyless debit was in flight on a killed instance, or the client pretended to know its fate")
	t.Volatile("unknownKeyed", tl.unknownKeyed)
	// Keys still execute once: a keyed debit's retry is replayed or, on
	// the shared store, taken over after its lease.
	scenario.Expect(t, "keysTwice", tl.keysTwice, 0)
}
