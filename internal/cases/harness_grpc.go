package cases

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/expectations"
	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/nethost"
	"github.com/rpcbench/rpcbench/internal/outcome"
	"github.com/rpcbench/rpcbench/internal/pins"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// The grpc group judges gRPC clients: each of its scenarios runs once per
// column, a (stack, configuration), against rpcserver in its gRPC mode,
// which serves rpcbench's own wire on the same address. The first column
// is rpcbench's own client on its own wire, the reference; the others are
// a client adapter (internal/cut, adapters/PROTOCOL.md) in each of the
// configurations of cut.GRPCConfigs. A scenario observes, from the
// server's log, whether each of its invariants held, was violated or is
// unsupported by the stack, and its verdict is pins.Judge's against the
// stack's expectations file (expectations/STACK.txt): a violation the
// file pins is a finding the evidence shows, one it does not pin, or a
// pin that no longer happens, fails. An adapter that breaks its protocol
// is an ERROR.

// Stacks: the reference column's, rpcbench's own client, and those of
// the client adapters this package names, as their init_ok names them;
// cut.Stacks lists every adapter's.
const (
	StackRPCBench  = "rpcbench"
	StackGRPCGo    = "grpc-go"
	StackConnectGo = "connect-go"
)

// needsAdapterPrefix starts the Needs of a scenario that drives a
// client adapter.
const needsAdapterPrefix = "adapter:"

// NeedsAdapter is the Needs of a scenario that drives stack's client
// adapter: Env.Adapters must name its binary.
func NeedsAdapter(stack string) string { return needsAdapterPrefix + stack }

// Adapter returns the stack whose adapter c drives, by its Needs: the
// stack a NeedsAdapter value names.
func (c Case) Adapter() (stack string, ok bool) {
	for _, n := range c.Needs {
		if stack, ok := strings.CutPrefix(n, needsAdapterPrefix); ok {
			return stack, true
		}
	}
	return "", false
}

// column is one (stack, configuration) a grpc scenario runs in.
type column struct {
	stack string
	// config names the configuration: "client" for rpcbench's own
	// client in its default configuration, "hedged" for it hedging, else
	// a cut.GRPCConfig's name.
	config string
	grpc   cut.GRPCConfig
	// cut is the adapter's stack; zero in the reference column.
	cut cut.Stack
}

// slug is the column's part of a scenario's name: snake_case.
func (c column) slug() string {
	s := c.stack + "_" + c.config
	if c.stack == StackRPCBench && c.config == "client" {
		s = c.stack
	}
	return strings.NewReplacer("-", "", "+", "_").Replace(s)
}

// The kinds of grpc scenario, by the configurations they run in.
const (
	// kindPlain runs in every configuration without a keepalive or a
	// hedging policy.
	kindPlain = iota
	// kindKeepalive runs in the keepalive configuration: the others
	// would wait out every such scenario's deadline and show nothing
	// new.
	kindKeepalive
	// kindHedge runs in the default configuration, as the control, and
	// the hedged one.
	kindHedge
	// kindPerAttempt runs in the per-attempt configuration alone; the
	// reference column's client has a 200ms attempt timeout.
	kindPerAttempt
)

// configsOf are the names of the adapter configurations a scenario of
// kind runs in, and the reference column's.
func configsOf(kind int) (adapter []string, reference string) {
	switch kind {
	case kindKeepalive:
		return []string{"keepalive"}, "keepalive"
	case kindHedge:
		return []string{"default", "hedged"}, "hedged"
	case kindPerAttempt:
		return []string{"per-attempt"}, "per-attempt"
	}
	return []string{"default", "retry", "retry+key", "throttled"}, "client"
}

// columnsOf are the columns of a scenario of kind: the reference, then
// each stack in each of the kind's configurations.
func columnsOf(kind int) []column {
	names, ref := configsOf(kind)
	cols := []column{{stack: StackRPCBench, config: ref}}
	for _, st := range cut.Stacks() {
		for _, g := range cut.GRPCConfigs() {
			if slices.Contains(names, g.Name) {
				cols = append(cols, column{stack: st.Name, config: g.Name, grpc: g, cut: st})
			}
		}
	}
	return cols
}

// allColumns are every column some grpc scenario runs in.
func allColumns() []column {
	var out []column
	for _, kind := range []int{kindPlain, kindKeepalive, kindHedge, kindPerAttempt} {
		for _, col := range columnsOf(kind) {
			if !slices.ContainsFunc(out, func(c column) bool { return c.stack == col.stack && c.config == col.config }) {
				out = append(out, col)
			}
		}
	}
	return out
}

// columns are the columns sc runs in.
func (sc grpcScenario) columns() []column { return columnsOf(sc.kind) }

// Invariants the grpc scenarios observe.
const (
	// invExecOnce: the server executed the debit at most once.
	invExecOnce = "exec_at_most_once"
	// invOKExecuted: a call answered OK was executed (or replayed) by the
	// server: a stack cannot say OK for a call the server never saw.
	invOKExecuted = "ok_only_if_executed"
	// invRecovers: a call whose first request the server proved it did
	// not execute (refused it unexecuted) ends OK, executed once.
	invRecovers = "recovers"
	// invOwnAnswer: every call got the answer to its own request.
	invOwnAnswer = "own_answer"
	// invWithinDeadline: the call returned by its deadline, plus slack for
	// a loaded machine.
	invWithinDeadline = "within_deadline"
	// invPushback: no retry reached the server before the retry-after
	// hint of the answer that refused it had passed.
	invPushback = "pushback_honoured"
	// invAmplification: against a server refusing every request, the
	// requests stay within what a retry budget allows: calls×1.1 + 10
	// (gRFC A6's throttling with 10 tokens and ratio 0.1, as rpcbench's
	// own RetryBudget).
	invAmplification = "amplification_capped"
	// invTimeoutLeft: every attempt's grpc-timeout, as the server
	// received it, is at most what was left of the call's deadline when
	// the attempt reached the server.
	invTimeoutLeft = "timeout_is_time_left"
	// invExpiredSkipped: a request whose deadline passed while it waited
	// for a busy server was never executed.
	invExpiredSkipped = "expired_not_executed"
	// invServesOnceUp: a call made once the server listens, after one
	// made while nothing listened, is served: executed once, OK.
	invServesOnceUp = "serves_once_up"
	// invDeadPeer: a connection whose peer went silent was closed by the
	// client, by the server's log, before the call's deadline.
	invDeadPeer = "dead_peer_detected"
	// invWaitsForReady: a wait-for-ready call made while nothing
	// listened was served, once, when the server came up within its
	// deadline.
	invWaitsForReady = "waits_for_ready"
	// invHedgeTail: the slowest of a run of gets, one of which the
	// server sleeps, returned before that sleep ended.
	invHedgeTail = "hedge_cuts_tail"
	// invHedgeBounded: hedging sent no more requests than the slow get's
	// hedges, with slack for a loaded machine.
	invHedgeBounded = "hedges_bounded"
	// invAttemptCut: a get whose first attempt the server sleeps 1s
	// returned OK well before that second, on a later attempt.
	invAttemptCut = "attempt_timeout_cuts"
)

// grpcInvariants are every invariant a pin may name.
var grpcInvariants = []string{invExecOnce, invOKExecuted, invRecovers, invOwnAnswer, invWithinDeadline, invPushback, invAmplification, invTimeoutLeft,
	invExpiredSkipped, invServesOnceUp, invDeadPeer, invWaitsForReady, invHedgeTail, invHedgeBounded, invAttemptCut}

// grpcScenario is one scenario of the grpc group, before it is spread
// over the columns.
type grpcScenario struct {
	name, doc string
	// fault is the server's fault, on either wire; in the reference
	// column a fault with no equivalent on rpcbench's wire makes the
	// scenario's invariants unsupported, and it starts no server.
	fault grpcFault
	// noServer: the scenario's calls go to an address nothing listens
	// on, in every column.
	noServer bool
	run      func(g *grpcT)
	// invs are the invariants the scenario observes, each once: all of
	// them unsupported in a column whose stack lacks a capability the
	// column needs.
	invs []string
	// kind says which configurations it runs in: kindPlain,
	// kindKeepalive or kindHedge.
	kind int
	// needs are the capabilities a stack must have for the scenario to
	// mean anything in it, beyond its configuration's.
	needs []string
	// testHost: the scenario runs its server on a test host (package
	// nethost), in every column, and needs NeedsNetwork.
	testHost bool
	// timed: the scenario's outcome rests on timing (a fault's delay
	// against a deadline) although its invariants count executions or
	// answers, so it does not run beside others (see parallel).
	timed bool
}

// untimedInvariants are the invariants that count what happened (how often
// a debit executed, which answer a call got) and not how long it took.
var untimedInvariants = []string{invExecOnce, invOKExecuted, invRecovers, invOwnAnswer, invAmplification}

// pool says which scenarios sc may run beside (Case.Pool): PoolCounts
// when its invariants count rather than time, it sets no timing of its
// own against a fault's (timed) and uses no test host; PoolKeepalive for
// a keepalive scenario, which waits seconds on the stack's keepalive
// timers (on a test host of its own, for one that has one); else none.
func (sc grpcScenario) pool() string {
	if sc.kind == kindKeepalive {
		return PoolKeepalive
	}
	if sc.timed || sc.testHost || sc.noServer {
		return ""
	}
	for _, inv := range sc.invs {
		if !slices.Contains(untimedInvariants, inv) {
			return ""
		}
	}
	return PoolCounts
}

// referenceCaps are what rpcbench's own client implements, in the
// adapters' terms: no wait-for-ready, no transparent retry (its wire
// has no refused stream to retry).
var referenceCaps = cut.Capabilities{RetryPolicy: true, Hedging: true, Throttling: true, Keepalive: true, Pushback: true}

// unsupportedIn reports whether sc has nothing to run in col, before any
// adapter starts: the reference column has no equivalent of its fault,
// or lacks a capability it needs.
func (sc grpcScenario) unsupportedIn(col column) bool {
	return col.stack == StackRPCBench && (sc.fault.grpc != "" && sc.fault.rb == "" || len(referenceCaps.Missing(sc.needs...)) > 0)
}

// grpcCases spreads each scenario over every column.
func grpcCases(scs []grpcScenario) []Case {
	var out []Case
	for _, sc := range scs {
		for _, col := range sc.columns() {
			c := Case{Name: sc.name + "_" + col.slug(), Group: GroupGRPC,
				Doc:    sc.doc + " (" + col.stack + ", " + col.config + ")",
				Column: Column{Scenario: sc.name, Stack: col.stack, Config: col.config},
				Pool:   sc.pool()}
			if col.stack != StackRPCBench {
				c.Needs = []string{NeedsAdapter(col.stack)}
			}
			if sc.testHost {
				c.Needs = append(c.Needs, NeedsNetwork)
			}
			c.NoServer = sc.noServer || sc.unsupportedIn(col)
			c.run = func(t *T) { runGRPC(t, sc, col) }
			out = append(out, c)
		}
	}
	return out
}

// grpcT is a grpc scenario running in one column.
type grpcT struct {
	*T
	sc      grpcScenario
	col     column
	s       *server      // nil for a noServer scenario
	target  string       // where the calls go
	adapter *cut.Adapter // nil in the reference column
	rb      *client.Client
	obs     []outcome.Observation
	pins    pins.Pins // the stack's
	calls   int
	// lacks is why the column is unsupported, when it is.
	lacks string
	// opts are the server's options before start adds the wire and the
	// fault: a scenario sets what it needs (Workers) first.
	opts serverOpts
}

// runGRPC runs sc in col and judges it against the stack's pins. In an
// adapter column the adapter starts first: a stack lacking what the
// column needs, by its own init_ok, observes every invariant of sc
// unsupported and starts no server.
func runGRPC(t *T, sc grpcScenario, col column) {
	g := &grpcT{T: t, sc: sc, col: col}
	t.Field("scenario", sc.name)
	t.Field("stack", col.stack)
	t.Field("config", col.config)
	p, err := loadPins(col.stack)
	if err != nil {
		t.Errored("%v", err)
	}
	g.pins = p
	if col.stack != StackRPCBench {
		g.adapter = g.startAdapter(col.stack)
		caps := g.adapter.Info().Caps
		if lack := caps.Missing(append(slices.Clone(col.grpc.Needs), sc.needs...)...); len(lack) > 0 {
			g.unsupported(col.stack+" lacks "+strings.Join(lack, ", "), sc.invs...)
		} else {
			g.col.grpc = col.grpc.Adjust(col.cut, caps)
			sc.run(g)
		}
	} else if lack := referenceCaps.Missing(sc.needs...); len(lack) > 0 {
		g.unsupported("rpcbench's client lacks "+strings.Join(lack, ", "), sc.invs...)
	} else {
		sc.run(g)
	}
	g.observedAll()
	t.judge(p.Judge(col.config, sc.name, g.obs), g.lacks)
}

// judge acts on the pins' judgement: each disagreement fails the
// scenario; agreeing, it is a FINDING when a pinned violation was
// observed, and N/A (lacks saying why) when the stack supported none of
// its invariants.
func (t *T) judge(j pins.Judgement, lacks string) {
	for _, d := range j.Disagreements {
		t.Check(false, "%s", d)
	}
	t.finding = len(j.Findings) > 0
	if j.AllUnsupported {
		t.na = cmp.Or(lacks, "the stack supports none of the scenario's invariants")
	}
}

// observedAll fails the scenario unless it observed each invariant it
// declares once, and no other: a column where it observed fewer would
// leave a scorecard row blank without saying why.
func (g *grpcT) observedAll() { g.observedExactly(g.obs, g.sc.invs) }

// observedExactly fails the scenario, unless it has already failed,
// when obs do not name each of want once and nothing else.
func (t *T) observedExactly(obs []outcome.Observation, want []string) {
	var got []string
	for _, o := range obs {
		got = append(got, o.Invariant)
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if len(t.errors) == 0 && len(t.failures) == 0 && !slices.Equal(got, want) {
		t.Check(false, "observed invariants %v, the scenario declares %v", got, want)
	}
}

// loadPins reads the stack's expectations file; a pin naming no grpc
// scenario, configuration or invariant is an error.
func loadPins(stack string) (pins.Pins, error) {
	name := stack + ".txt"
	f, err := expectations.Files.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return pins.Parse(stack, "expectations/"+name, strings.NewReader(""), knownPin(stack))
	}
	if err != nil {
		return pins.Pins{}, err
	}
	defer f.Close()
	return pins.Parse(stack, "expectations/"+name, f, knownPin(stack))
}

// knownPin accepts a pin of stack that names a grpc scenario, one of
// the stack's configurations and an invariant.
func knownPin(stack string) pins.Known {
	return func(k pins.Key) error {
		if slices.ContainsFunc(srvScenarios(), func(sc srvScenario) bool { return sc.name == k.Scenario }) {
			if k.Config != configServer {
				return fmt.Errorf("a grpcserver scenario's configuration is %q, not %q", configServer, k.Config)
			}
			if !slices.Contains(serverInvariants, k.Invariant) {
				return fmt.Errorf("no server invariant %q (want one of %s)", k.Invariant, strings.Join(serverInvariants, ", "))
			}
			return nil
		}
		if !slices.Contains(grpcInvariants, k.Invariant) {
			return fmt.Errorf("no invariant %q (want one of %s)", k.Invariant, strings.Join(grpcInvariants, ", "))
		}
		if !slices.ContainsFunc(grpcScenarios(), func(sc grpcScenario) bool { return sc.name == k.Scenario }) {
			return fmt.Errorf("no grpc scenario %q", k.Scenario)
		}
		var configs []string
		for _, col := range allColumns() {
			if col.stack == stack {
				configs = append(configs, col.config)
			}
		}
		if !slices.Contains(configs, k.Config) {
			return fmt.Errorf("%s has no configuration %q (want one of %s)", stack, k.Config, strings.Join(configs, ", "))
		}
		return nil
	}
}

// observe records the outcome of invariant inv as a stable field and for
// the judgement.
func (g *grpcT) observe(inv string, o outcome.Outcome) {
	g.obs = append(g.obs, g.record(g.pins, pins.Key{Config: g.col.config, Scenario: g.sc.name, Invariant: inv}, o))
}

// record records the outcome o of k's invariant as an Outcome field
// (INV:=violated) and returns it as an observation. A violation pinned as
// happening sometimes is recorded as outcome.Sometimes, and this run's
// outcome as the volatile field INV_this_run: either may be seen. The
// scenario failed unless the outcome agreed with the stack's pins.
func (t *T) record(p pins.Pins, k pins.Key, o outcome.Outcome) outcome.Observation {
	v := o
	if p.Sometimes(k) && (o == outcome.Holds || o == outcome.Violated) {
		v = outcome.Sometimes
	}
	t.fields = append(t.fields, report.Field{Key: k.Invariant, Value: v.String(), Kind: report.Outcome})
	if v == outcome.Sometimes {
		t.Volatile(k.Invariant+"_this_run", o)
	}
	return outcome.Observation{Invariant: k.Invariant, Outcome: o}
}

// holds is Holds when ok, else Violated.
func holds(ok bool) outcome.Outcome {
	if ok {
		return outcome.Holds
	}
	return outcome.Violated
}

// grpcFault is one fault, as the gRPC side's rule and as the reference
// column's rule on rpcbench's wire; rb is "" when rpcbench's wire has no
// equivalent, and the invariants that need the fault are then
// unsupported in the reference column.
type grpcFault struct{ grpc, rb string }

// start starts the server with the scenario's fault (runGRPC has started
// the adapter of an adapter column). It reports false in the reference column when the
// fault has no equivalent there: the scenario then observes its
// invariants as unsupported.
func (g *grpcT) start() bool { return g.startWith(g.opts) }

// startIn is start with the server inside test host h, bound to its
// address.
func (g *grpcT) startIn(h *nethost.Host) bool {
	o := g.opts
	o.Addr, o.Exec = h.Addr.String()+":0", h.Exec
	return g.startWith(o)
}

// startWith is start with the server's options o.
func (g *grpcT) startWith(o serverOpts) bool {
	f := g.sc.fault
	o.GRPC = true
	if g.sc.noServer {
		addr, err := freeAddr()
		if err != nil {
			g.Fatalf("free address: %v", err)
		}
		g.target = addr
		if g.col.stack == StackRPCBench {
			g.rb = g.client(addr, g.referenceConfig())
		}
		return true
	}
	if g.col.stack == StackRPCBench {
		if g.sc.unsupportedIn(g.col) {
			return false
		}
		if f.rb != "" {
			o.Faults = []string{f.rb}
		}
		g.s = g.startServer(o)
		g.target = g.s.Addr
		g.rb = g.client(g.s.Addr, g.referenceConfig())
		return true
	}
	if f.grpc != "" {
		o.GRPCFaults = []string{f.grpc}
	}
	g.s = g.startServer(o)
	g.target = g.s.Addr
	return true
}

// referenceConfig is rpcbench's own client's configuration in the
// reference column: its defaults, hedging idempotent calls as the hedged
// configuration does (3 attempts, 100ms apart) in the column of that
// name, and with the per-attempt configuration's 200ms attempt timeout
// in that one, and with the keepalive configuration's pings in the
// keepalive one.
func (g *grpcT) referenceConfig() client.Config {
	cfg := client.DefaultConfig()
	switch g.col.config {
	case "hedged":
		cfg.Hedge = &client.HedgeConfig{Delay: 100 * time.Millisecond, MaxHedges: 2}
	case "per-attempt":
		cfg.AttemptTimeout = grpcAttemptTimeout
	case "keepalive":
		ka := grpcKeepalive()
		cfg.Keepalive = &client.KeepaliveConfig{Time: ka.Time, Timeout: ka.Timeout}
	}
	return cfg
}

// startAdapter starts the stack's adapter, its stderr in the log
// directory, and stops it when the scenario ends; an adapter that breaks
// its protocol on the way is an ERROR.
func (g *grpcT) startAdapter(stack string) *cut.Adapter {
	bin := g.env.Adapters[stack]
	if bin == "" {
		g.Errored("no adapter binary for %s: build it with ./build.sh", stack)
	}
	logf, err := os.Create(filepath.Join(g.env.LogDir, report.AdapterLog(g.name)))
	if err != nil {
		g.Fatalf("adapter log: %v", err)
	}
	g.cleanup(func() { logf.Close() })
	a, err := cut.Start(g.ctx, cut.Spec{Bin: bin, Scenario: g.name, Stderr: logf})
	if err != nil {
		g.Errored("%v", err)
	}
	g.cleanup(func() {
		if err := a.Close(); err != nil && len(g.errors) == 0 {
			g.errors = append(g.errors, err.Error())
		}
	})
	info := a.Info()
	g.Field("version", info.Version)
	return a
}

// call is one call a grpc scenario makes: a get or a debit of amount on
// account, within deadline, the handler sleeping sleepMs first.
type call struct {
	method   string // bank.MethodGet or bank.MethodDebit
	account  string
	amount   int64
	deadline time.Duration
	sleepMs  int64
	// waitForReady sets the call's wait-for-ready; rpcbench's client has
	// no such option.
	waitForReady bool
	// attempt is rpcbench's client's attempt timeout in the reference
	// column, 0 for its default; adapters have none but the deadline.
	attempt time.Duration
}

// answer is what a caller learned of a call, and how many requests for
// it reached the server.
type answer struct {
	// code is the status as the caller saw it: a gRPC code's name, or in
	// the reference column rpcbench's status, whose OK, UNAVAILABLE and
	// DEADLINE_EXCEEDED mean what gRPC's do, and UNKNOWN for an outcome
	// its client reports as unknown.
	code string
	// account is the account the answer names; "" unless code is OK.
	account string
	elapsed time.Duration
	// requests counts the requests the server received for the call:
	// its ATTEMPT events on the gRPC side, the increase of its method's
	// request counter on rpcbench's wire.
	requests int
}

// do makes c in the column: through the adapter, or through rpcbench's
// client. A debit is keyed in a column that keys debits.
func (g *grpcT) do(c call) answer { return g.doAll([]call{c})[0] }

// doAll makes the calls at once and returns their answers in order. An
// answer's requests are counted only when there is one call.
func (g *grpcT) doAll(cs []call) []answer { return g.begin(cs).wait() }

// pending are calls begun and not yet waited for.
type pending struct {
	g     *grpcT
	cs    []call
	names []string
	wg    sync.WaitGroup
	// raws are the adapter's results, rs rpcbench's client's: written
	// by the calls' goroutines, read after wg.Wait.
	raws          []rawResult
	rs            []client.Result
	before, after counters
}

type rawResult struct {
	r   cut.Result
	err error
}

// begin starts the calls, each on a goroutine of its own, and returns
// at once: the scenario may await the server's log meanwhile, and must
// call wait. A debit is keyed in a column that keys debits.
func (g *grpcT) begin(cs []call) *pending {
	p := &pending{g: g, cs: cs, names: make([]string, len(cs))}
	keys := make([]string, len(cs))
	for i, c := range cs {
		g.calls++
		p.names[i] = fmt.Sprintf("%s-%d", g.name, g.calls)
		if c.method == bank.MethodDebit && g.col.grpc.Key {
			keys[i] = "key-" + p.names[i]
		}
	}
	if g.adapter == nil {
		p.beginRPCBench(keys)
		return p
	}
	p.raws = make([]rawResult, len(cs))
	for i, c := range cs {
		method, req := "rpcbench.bank.v1.Bank/Get", map[string]any{"account": c.account}
		if c.method == bank.MethodDebit {
			method, req = "rpcbench.bank.v1.Bank/Debit", map[string]any{"account": c.account, "amount": fmt.Sprint(c.amount)}
		}
		if c.sleepMs > 0 {
			req["sleepMs"] = fmt.Sprint(c.sleepMs)
		}
		body, err := json.Marshal(req)
		if err != nil {
			g.Fatalf("request: %v", err)
		}
		cc := cut.Call{Channel: g.col.grpc.Channel("ch1", g.target), Method: method,
			Request: body, Deadline: c.deadline, Name: p.names[i], Key: keys[i], WaitForReady: c.waitForReady}
		p.wg.Go(func() {
			r, err := g.adapter.Do(g.ctx, cc)
			p.raws[i] = rawResult{r, err}
		})
	}
	return p
}

// wait waits for the calls begun and returns their answers in order.
func (p *pending) wait() []answer {
	g := p.g
	p.wg.Wait()
	if g.adapter == nil {
		return p.waitRPCBench()
	}
	var evs []serverapi.Event
	if len(p.cs) == 1 && g.s != nil {
		evs = g.events(g.s)
	}
	out := make([]answer, len(p.cs))
	for i, rw := range p.raws {
		if rw.err != nil {
			g.Errored("%v", rw.err)
		}
		a := answer{code: rw.r.Code.String(), elapsed: rw.r.Elapsed}
		if rw.r.Code == cut.OK {
			var resp struct{ Account string }
			if err := json.Unmarshal(rw.r.Response, &resp); err != nil {
				g.Errored("adapter %s answered %q, not an AccountReply: %v", g.col.stack, rw.r.Response, err)
			}
			a.account = resp.Account
		}
		a.requests = countEvents(evs, func(e serverapi.Event) bool {
			return e.Name == serverapi.EventAttempt && e.Text(serverapi.KeyCall) == p.names[i]
		})
		out[i] = a
	}
	return out
}

// beginRPCBench starts the calls with rpcbench's own client on its own
// wire.
func (p *pending) beginRPCBench(keys []string) {
	g := p.g
	if g.s != nil {
		p.before = g.counters(g.s)
	}
	p.rs = make([]client.Result, len(p.cs))
	for i, c := range p.cs {
		rc := getCall(c.account)
		if c.method == bank.MethodDebit {
			rc = debitCall(c.account, int(c.amount), keys[i])
		}
		if c.sleepMs > 0 {
			rc.Payload = fmt.Appendf(rc.Payload, " sleep=%d", c.sleepMs)
		}
		rc.Timeout = c.deadline
		if c.attempt > 0 {
			rc.AttemptTimeout = c.attempt
		}
		p.wg.Go(func() { p.rs[i] = g.rb.Do(g.ctx, rc) })
	}
}

func (p *pending) waitRPCBench() []answer {
	g := p.g
	if g.s != nil {
		p.after = g.counters(g.s)
	}
	out := make([]answer, len(p.cs))
	for i, r := range p.rs {
		a := answer{code: r.Status.String(), elapsed: r.Elapsed}
		if r.Status == proto.StatusOK {
			a.account = fields(r)["account"]
		}
		if len(p.cs) == 1 {
			b, e := p.before, p.after
			a.requests = int(e.RequestsDebit - b.RequestsDebit + e.RequestsGet - b.RequestsGet)
		}
		out[i] = a
	}
	return out
}

// executions counts the debits of account the server's log shows
// executed: EXEC events with status OK, on either wire.
func (g *grpcT) executions(account string) int {
	return countEvents(g.events(g.s), func(e serverapi.Event) bool {
		return e.Name == serverapi.EventExec && e.Text(serverapi.KeyMethod) == bank.MethodDebit &&
			e.Text(serverapi.KeyAccount) == account && e.Text(serverapi.KeyStatus) == proto.StatusOK.String()
	})
}
