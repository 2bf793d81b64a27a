package judge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/configs"
	"github.com/rpcbench/rpcbench/expectations"
	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/nethost"
	"github.com/rpcbench/rpcbench/internal/outcome"
	"github.com/rpcbench/rpcbench/internal/pins"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/proxy"
	"github.com/rpcbench/rpcbench/internal/rawgrpc"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/sut"
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
	StackGRPCGo    = cut.StackGRPCGo
	StackConnectGo = "connect-go"
)

// column is one (stack, configuration) a grpc scenario runs in.
type column struct {
	Stack string
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
	s := c.Stack + "_" + c.config
	if c.Stack == StackRPCBench && c.config == "client" {
		s = c.Stack
	}
	return Slug(s)
}

// Slug is a stack's or configuration's name as part of a case's name:
// - dropped, and +, @ and . (a stack at a release, grpc-go@1.60.3) as _.
func Slug(name string) string {
	return strings.NewReplacer("-", "", "+", "_", "@", "_", ".", "_").Replace(name)
}

// The kinds of grpc scenario, by the configurations they run in: a
// configuration runs the kinds its file lists (cut.GRPCConfig.Runs).
const (
	// kindPlain runs in every configuration that runs plain scenarios.
	kindPlain = cut.RunPlain
	// KindKeepalive runs in a keepalive configuration: the others would
	// wait out every such scenario's deadline and show nothing new.
	KindKeepalive = cut.RunKeepalive
	// KindHedge runs in the default configuration, as the control, and
	// the hedged one.
	KindHedge = cut.RunHedge
	// KindPerAttempt runs in the per-attempt configuration alone; the
	// reference column's client has a 200ms attempt timeout.
	KindPerAttempt = cut.RunPerAttempt
	// KindRetry runs in the configurations with a retry policy alone:
	// what it judges is what a retry policy does, and a column without
	// one would hold it untested.
	KindRetry = cut.RunRetry
)

// referenceOf is the reference column's configuration for a scenario
// of kind: rpcbench's own client configured as the kind's built-in
// configuration is (ReferenceConfig).
func referenceOf(kind string) string {
	switch kind {
	case KindKeepalive:
		return "keepalive"
	case KindHedge:
		return "hedged"
	case KindPerAttempt:
		return "per-attempt"
	}
	return "client"
}

// clientStacks are the stacks of the suite's adapter columns.
func (s Suite) clientStacks() []cut.Stack {
	if s.Stacks != nil {
		return s.Stacks
	}
	return cut.Stacks()
}

// configs are the suite's adapter configurations.
func (s Suite) configs() []cut.GRPCConfig {
	if s.Configs != nil {
		return s.Configs
	}
	return configs.Builtin()
}

// columnsOf are the columns of a scenario of kind: the reference, then
// each stack in each configuration that runs the kind.
func (s Suite) columnsOf(kind string) []column {
	var cols []column
	if !s.NoReference {
		cols = append(cols, column{Stack: StackRPCBench, config: referenceOf(kind)})
	}
	for _, st := range s.clientStacks() {
		for _, g := range s.configs() {
			if slices.Contains(g.Runs, cmp.Or(kind, kindPlain)) && (s.Only == nil || s.Only(st.Name, g.Name)) {
				cols = append(cols, column{Stack: st.Name, config: g.Name, grpc: g, cut: st})
			}
		}
	}
	return cols
}

// allColumns are every column some grpc scenario runs in.
func (s Suite) allColumns() []column {
	var out []column
	for _, kind := range cut.Runs {
		for _, col := range s.columnsOf(kind) {
			if !slices.ContainsFunc(out, func(c column) bool { return c.Stack == col.Stack && c.config == col.config }) {
				out = append(out, col)
			}
		}
	}
	return out
}

// Invariants the grpc scenarios observe.
const (
	// InvExecOnce: the server executed the debit at most once.
	InvExecOnce = "exec_at_most_once"
	// InvOKExecuted: a call answered OK was executed (or replayed) by the
	// server: a stack cannot say OK for a call the server never saw.
	InvOKExecuted = "ok_only_if_executed"
	// InvRecovers: a call whose first request the server proved it did
	// not execute (refused it unexecuted) ends OK, executed once.
	InvRecovers = "recovers"
	// InvOwnAnswer: every call got the answer to its own request.
	InvOwnAnswer = "own_answer"
	// InvWithinDeadline: the call returned by its deadline, plus slack for
	// a loaded machine.
	InvWithinDeadline = "within_deadline"
	// InvPushback: no retry reached the server before the retry-after
	// hint of the answer that refused it had passed.
	InvPushback = "pushback_honoured"
	// InvAmplification: against a server refusing every request, the
	// requests stay within what a retry budget allows: calls×1.1 + 10
	// (gRFC A6's throttling with 10 tokens and ratio 0.1, as rpcbench's
	// own RetryBudget).
	InvAmplification = "amplification_capped"
	// InvTimeoutLeft: every attempt's grpc-timeout, as the server
	// received it, is at most what was left of the call's deadline when
	// the attempt reached the server.
	InvTimeoutLeft = "timeout_is_time_left"
	// InvExpiredSkipped: a request whose deadline passed while it waited
	// for a busy server was never executed.
	InvExpiredSkipped = "expired_not_executed"
	// InvServesOnceUp: a call made once the server listens, after one
	// made while nothing listened, is served: executed once, OK.
	InvServesOnceUp = "serves_once_up"
	// InvDeadPeer: a connection whose peer went silent was closed by the
	// client, by the server's log, before the call's deadline.
	InvDeadPeer = "dead_peer_detected"
	// InvWaitsForReady: a wait-for-ready call made while nothing
	// listened was served, once, when the server came up within its
	// deadline.
	InvWaitsForReady = "waits_for_ready"
	// InvHedgeTail: the slowest of a run of gets, one of which the
	// server sleeps, returned before that sleep ended.
	InvHedgeTail = "hedge_cuts_tail"
	// InvHedgeBounded: hedging sent no more requests than the slow get's
	// hedges, with slack for a loaded machine.
	InvHedgeBounded = "hedges_bounded"
	// InvAttemptCut: a get whose first attempt the server sleeps 1s
	// returned OK well before that second, on a later attempt.
	InvAttemptCut = "attempt_timeout_cuts"
	// InvNotCancelled: a call its caller did not cancel never ends
	// CANCELLED, the code that tells the caller it gave the call up
	// itself. The harness never cancels a call: it sets a deadline.
	InvNotCancelled = "never_cancelled"
	// InvRefusalReported: a call whose every request the server refused
	// unexecuted, by its log, ends UNAVAILABLE: the code that tells the
	// caller nothing ran. DEADLINE_EXCEEDED leaves a debit's caller
	// unable to tell it from one that ran unanswered.
	InvRefusalReported = "refusal_reported"
	// InvAttemptsBounded: a call the server refuses unexecuted every
	// time sends at most MaxRequestsPerCall requests, by the server's
	// log, before it ends.
	InvAttemptsBounded = "attempts_bounded"
)

// MaxRequestsPerCall bounds the requests of one call against a server
// that refuses every one unexecuted: gRFC A6 caps a retry policy at 5
// attempts, and each may be retried once transparently when the server
// proves it did not process it (REFUSED_STREAM, a GOAWAY below it).
const MaxRequestsPerCall = 10

// grpcInvariants are every invariant a pin may name.
var grpcInvariants = []string{InvExecOnce, InvOKExecuted, InvRecovers, InvOwnAnswer, InvWithinDeadline, InvPushback, InvAmplification, InvTimeoutLeft,
	InvExpiredSkipped, InvServesOnceUp, InvDeadPeer, InvWaitsForReady, InvHedgeTail, InvHedgeBounded, InvAttemptCut, InvNotCancelled,
	InvAttemptsBounded, InvRefusalReported}

// Suite is every scenario the judge runs: the grpc scenarios, each in
// every client column, then the grpcserver scenarios, each in every
// server column. A pin must name one of them.
type Suite struct {
	// Group is the group its cases are of.
	Group  string
	Client []Scenario
	Server []ServerScenario
	// Controls are the judge's negative controls, run after the rest.
	Controls []Control
	// Stacks are the client stacks judged, each a column in each of
	// Configs that runs a scenario's kind; nil for cut.Stacks.
	Stacks []cut.Stack
	// Configs are the configurations the client stacks are judged in;
	// nil for the built-in ones (package configs).
	Configs []cut.GRPCConfig
	// ServerStacks are the server columns' stacks after rpcserver's; nil
	// for cut.Stacks', empty for no server column at all.
	ServerStacks []string
	// Only, when set, keeps the (stack, configuration) columns it
	// accepts of Stacks × Configs.
	Only func(stack, config string) bool
	// NoReference leaves out the reference columns, rpcbench's own
	// client's: a run judging one stack at many releases needs them
	// once, not once a release.
	NoReference bool
	// PinFiles names, by stack, the pins file a stack is judged against
	// instead of its embedded one (expectations/STACK.txt); "" for no
	// pins at all, so that every violation fails.
	PinFiles map[string]string
	// PinSuite, when set, is the suite whose scenarios the pins name,
	// when they are not this one's: the proxy group's columns are judged
	// by the grpc group's pins (Scenario.Pins).
	PinSuite *Suite
	// PinNames names, by stack, the embedded expectations file a stack
	// is judged against instead of STACK.txt: a stack at another
	// release, "releases/grpc-go@1.60.1.txt" or the shipped release's.
	PinNames map[string]string
}

// Cases is every client scenario in each of its columns, then every
// server scenario in each server column.
func (s Suite) Cases() []scenario.Case {
	return append(append(grpcCases(s), srvCases(s)...), controlCases(s)...)
}

// Scenario is one scenario of the grpc group, before it is spread
// over the columns.
type Scenario struct {
	Name, Doc string
	// Fault is the server's fault, on either wire; in the reference
	// column a fault with no equivalent on rpcbench's wire makes the
	// scenario's invariants unsupported, and it starts no server.
	Fault Fault
	// NoServer: the scenario's calls go to an address nothing listens
	// on, in every column.
	NoServer bool
	Run      func(g *T)
	// Invs are the invariants the scenario observes, each once: all of
	// them unsupported in a column whose stack lacks a capability the
	// column needs.
	Invs []string
	// Kind says which configurations it runs in: KindKeepalive,
	// KindHedge, KindPerAttempt or KindRetry; "" for plain.
	Kind string
	// Needs are the capabilities a stack must have for the scenario to
	// mean anything in it, beyond its configuration's.
	Needs []string
	// TestHost: the scenario runs its server on a test host (package
	// nethost), in every column, and needs NeedsNetwork.
	TestHost bool
	// CodeVaries: the code the caller of its one call is told varies
	// from run to run in some column, so never_cancelled is not judged
	// here but by a scenario of repeated calls (grpc_reset_code).
	CodeVaries bool
	// Proxy, when set, is the scenario's fault as a rule of rpcbench's
	// fault proxy (package proxy), which stands between the column's
	// client and a server with no fault of its own: what the grpc
	// group's scenario Pins shows with the server's fault, shown with
	// the proxy's. Its column is judged against Pins' pins.
	Proxy, Pins string
	// timed: the scenario's outcome rests on timing (a fault's delay
	// against a deadline) although its invariants count executions or
	// answers, so it does not run beside others (see parallel).
	Timed bool
}

// invariants are the invariants sc observes: those it declares, and
// never_cancelled, which the judge observes itself over every answer of
// a scenario that does not (unless its code varies, CodeVaries).
func (sc Scenario) invariants() []string {
	if sc.CodeVaries || slices.Contains(sc.Invs, InvNotCancelled) {
		return sc.Invs
	}
	return append(slices.Clone(sc.Invs), InvNotCancelled)
}

// untimedInvariants are the invariants that count what happened (how often
// a debit executed, which answer a call got) and not how long it took.
var untimedInvariants = []string{InvExecOnce, InvOKExecuted, InvRecovers, InvOwnAnswer, InvAmplification, InvNotCancelled}

// pool says which scenarios sc may run beside (Case.Pool): PoolCounts
// when its invariants count rather than time, it sets no timing of its
// own against a fault's (timed) and uses no test host; PoolKeepalive for
// a keepalive scenario, which waits seconds on the stack's keepalive
// timers (on a test host of its own, for one that has one); else none.
func (sc Scenario) pool() string {
	if sc.Kind == KindKeepalive {
		return scenario.PoolKeepalive
	}
	if sc.Timed || sc.TestHost || sc.NoServer {
		return ""
	}
	for _, inv := range sc.invariants() {
		if !slices.Contains(untimedInvariants, inv) {
			return ""
		}
	}
	return scenario.PoolCounts
}

// referenceCaps are what rpcbench's own client implements, in the
// adapters' terms: no wait-for-ready, no transparent retry (its wire
// has no refused stream to retry).
var referenceCaps = cut.Capabilities{RetryPolicy: true, Hedging: true, Throttling: true, Keepalive: true, Pushback: true}

// unsupportedIn reports whether sc has nothing to run in col, before any
// adapter starts: the reference column has no equivalent of its fault,
// or lacks a capability it needs.
func (sc Scenario) unsupportedIn(col column) bool {
	return col.Stack == StackRPCBench && (sc.Fault.GRPC != "" && sc.Fault.RB == "" || len(referenceCaps.Missing(sc.Needs...)) > 0)
}

// grpcCases spreads each scenario over every column.
func grpcCases(s Suite) []scenario.Case {
	var out []scenario.Case
	for _, sc := range s.Client {
		for _, col := range s.columnsOf(sc.Kind) {
			c := scenario.Case{Name: sc.Name + "_" + col.slug(), Group: s.Group,
				Doc:    sc.Doc + " (" + col.Stack + ", " + col.config + ")",
				Column: scenario.Column{Scenario: sc.Name, Stack: col.Stack, Config: col.config},
				Pool:   sc.pool()}
			if col.Stack != StackRPCBench {
				c.Needs = []string{scenario.NeedsAdapter(col.Stack)}
			}
			if sc.Proxy != "" && col.Stack != StackGRPCGo {
				c.Needs = append(c.Needs, scenario.NeedsAdapter(StackGRPCGo)) // the server behind the proxy
			}
			if sc.TestHost {
				c.Needs = append(c.Needs, scenario.NeedsNetwork)
			}
			// A scenario through the proxy starts grpc-go's server adapter,
			// no rpcserver.
			c.NoServer = sc.NoServer || sc.unsupportedIn(col) || sc.Proxy != ""
			c.Body = func(t *scenario.T) { runGRPC(t, s, sc, col) }
			out = append(out, c)
		}
	}
	return out
}

// T is a grpc scenario running in one column.
type T struct {
	*scenario.T
	Scenario Scenario
	Col      column
	S        *scenario.Server // nil for a NoServer scenario
	Target   string           // where the calls go
	Adapter  *cut.Adapter     // nil in the reference column
	RB       *client.Client
	obs      []outcome.Observation
	pins     pins.Pins // the stack's
	// answers are every answer the scenario's calls got, in order.
	answers []Answer
	calls   int
	// lacks is why the column is unsupported, when it is.
	lacks string
	// Opts are the server's options before start adds the wire and the
	// fault: a scenario sets what it needs (Workers) first.
	Opts scenario.ServerOpts
	// Proxy is the fault proxy the calls go through, for a scenario
	// whose fault is the proxy's (Scenario.Proxy), and Upstream the
	// server adapter behind it.
	Proxy    *proxy.Proxy
	Upstream *sut.Server
	syncs    int
}

// runGRPC runs sc in col and judges it against the stack's pins. In an
// adapter column the adapter starts first: a stack lacking what the
// column needs, by its own init_ok, observes every invariant of sc
// unsupported and starts no server.
func runGRPC(t *scenario.T, s Suite, sc Scenario, col column) {
	g := &T{T: t, Scenario: sc, Col: col}
	t.Field("scenario", sc.Name)
	t.Field("stack", col.Stack)
	t.Field("config", col.config)
	ps := s
	if s.PinSuite != nil {
		ps = *s.PinSuite
	}
	p, err := ps.LoadPins(col.Stack)
	if err != nil {
		t.Errored("%v", err)
	}
	g.pins = p
	if col.Stack != StackRPCBench {
		g.Adapter = g.startAdapter(col.Stack)
		caps := g.Adapter.Info().Caps
		if lack := caps.Missing(append(slices.Clone(col.grpc.Needs), sc.Needs...)...); len(lack) > 0 {
			g.Unsupported(col.Stack+" lacks "+strings.Join(lack, ", "), sc.invariants()...)
		} else {
			g.Col.grpc = col.grpc.Adjust(col.cut, caps)
			sc.Run(g)
		}
	} else if lack := referenceCaps.Missing(sc.Needs...); len(lack) > 0 {
		g.Unsupported("rpcbench's client lacks "+strings.Join(lack, ", "), sc.invariants()...)
	} else {
		sc.Run(g)
	}
	g.observeCodes()
	g.observedAll()
	judge(t, p.Judge(col.config, cmp.Or(sc.Pins, sc.Name), g.obs), g.lacks)
}

// judge acts on the pins' judgement: each disagreement fails the
// scenario; agreeing, it is a FINDING when a pinned violation was
// observed, and N/A (lacks saying why) when the stack supported none of
// its invariants.
func judge(t *scenario.T, j pins.Judgement, lacks string) {
	for _, d := range j.Disagreements {
		t.Check(false, "%s", d)
	}
	t.Finding = len(j.Findings) > 0
	if j.AllUnsupported {
		t.NA = cmp.Or(lacks, "the stack supports none of the scenario's invariants")
	}
}

// observedAll fails the scenario unless it observed each invariant it
// declares once, and no other: a column where it observed fewer would
// leave a scorecard row blank without saying why.
func (g *T) observedAll() { observedExactly(g.T, g.obs, g.Scenario.invariants()) }

// observeCodes observes never_cancelled over every answer the scenario
// got, unless it observed it itself or does not observe it: unsupported
// in a column the scenario could not run in, else held when no caller
// was told CANCELLED (the harness never cancels a call).
func (g *T) observeCodes() {
	if !slices.Contains(g.Scenario.invariants(), InvNotCancelled) ||
		slices.ContainsFunc(g.obs, func(o outcome.Observation) bool { return o.Invariant == InvNotCancelled }) {
		return
	}
	if g.lacks != "" || len(g.answers) == 0 {
		g.Observe(InvNotCancelled, outcome.Unsupported)
		return
	}
	cancelled := 0
	for _, a := range g.answers {
		if a.Code == "CANCELLED" {
			cancelled++
		}
	}
	g.Observe(InvNotCancelled, Holds(cancelled == 0))
}

// observedExactly fails the scenario, unless it has already failed,
// when obs do not name each of want once and nothing else.
func observedExactly(t *scenario.T, obs []outcome.Observation, want []string) {
	var got []string
	for _, o := range obs {
		got = append(got, o.Invariant)
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if len(t.Errors) == 0 && len(t.Failures) == 0 && !slices.Equal(got, want) {
		t.Check(false, "observed invariants %v, the scenario declares %v", got, want)
	}
}

// LoadPins reads the stack's expectations file; a pin naming no grpc
// scenario, configuration or invariant is an error.
func (s Suite) LoadPins(stack string) (pins.Pins, error) {
	if path, ok := s.PinFiles[stack]; ok {
		if path == "" {
			return pins.Parse(stack, "", strings.NewReader(""), s.KnownPin(stack))
		}
		return pins.Load(stack, path, s.KnownPin(stack))
	}
	name := stack + ".txt"
	if n, ok := s.PinNames[stack]; ok {
		name = n
	}
	if strings.HasPrefix(name, ReleasesDir) {
		// A release's own file speaks for what the matrix runs; the
		// shipped release's pins for the rest.
		base, _, _ := strings.Cut(stack, "@")
		over, err := s.embeddedPins(stack, name)
		if err != nil {
			return pins.Pins{}, err
		}
		shipped, err := s.embeddedPins(stack, base+".txt")
		if err != nil {
			return pins.Pins{}, err
		}
		return pins.Merge(shipped, over, func(config, scenario string) bool { return MatrixCovers(base, config, scenario) }), nil
	}
	return s.embeddedPins(stack, name)
}

// embeddedPins reads stack's pins from the embedded expectations file of
// that name; one that does not exist is no pins.
func (s Suite) embeddedPins(stack, name string) (pins.Pins, error) {
	f, err := expectations.Files.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return pins.Parse(stack, "expectations/"+name, strings.NewReader(""), s.KnownPin(stack))
	}
	if err != nil {
		return pins.Pins{}, err
	}
	defer f.Close()
	return pins.Parse(stack, "expectations/"+name, f, s.KnownPin(stack))
}

// ReleasesDir holds, among the embedded expectations, the pins of stacks
// at other releases (rpcbench matrix's).
const ReleasesDir = "releases/"

// The release matrix's coverage: what rpcbench matrix runs of each
// release, and so what a release's own pins file speaks for. Its
// configurations are what a library's release can change (retries,
// transparent retries, hedging, per-attempt timeouts, the codes it
// reports); retry+key and throttled differ from retry by what the server
// and the throttle do, not by the release. Keepalive's scenarios wait out
// a stack's timers, about 15 s a release, and run for grpcio alone,
// whose keepalive changed at 1.59. grpc_half_open_link needs a test host
// and waits on the kernel's timers (grpc_silent_peer shows the same
// keepalive); grpc_reset_after_exec's one call races a TCP reset against
// the retry, and in grpcio's PyPI releases 1.58.3 to 1.70.0 executed the
// debit once in some runs and twice in others, a coin flip a pin cannot
// hold (grpc_reset_code judges what a reset is reported as).
var (
	MatrixConfigs   = []string{"default", "retry", "hedged", "per-attempt", "keepalive"}
	matrixKeepalive = []string{"grpcio"}
	MatrixLeftOut   = []string{"grpc_half_open_link", "grpc_reset_after_exec"}
)

// MatrixCovers reports whether rpcbench matrix runs scenario in config
// for stack (its name without a release).
func MatrixCovers(stack, config, scenario string) bool {
	return slices.Contains(MatrixConfigs, config) && !slices.Contains(MatrixLeftOut, scenario) &&
		(config != "keepalive" || slices.Contains(matrixKeepalive, stack))
}

// KnownPin accepts a pin of stack that names a grpc scenario, one of
// the stack's configurations and an invariant.
func (s Suite) KnownPin(stack string) pins.Known {
	// The stack's configurations, found once for every pin of its file.
	var names []string
	for _, col := range s.allColumns() {
		if col.Stack == stack {
			names = append(names, col.config)
		}
	}
	if (s.PinFiles != nil || s.PinNames != nil) && stack != StackRPCBench {
		// A user's pins may name a built-in configuration this run
		// leaves out: it is not judged, as a scenario --run leaves out
		// is not.
		for _, b := range configs.Builtin() {
			if !slices.Contains(names, b.Name) {
				names = append(names, b.Name)
			}
		}
	}
	return func(k pins.Key) error {
		if slices.ContainsFunc(s.Server, func(sc ServerScenario) bool { return sc.Name == k.Scenario }) {
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
		if !slices.ContainsFunc(s.Client, func(sc Scenario) bool { return sc.Name == k.Scenario }) {
			return fmt.Errorf("no grpc scenario %q", k.Scenario)
		}
		if !slices.Contains(names, k.Config) && !(s.PinFiles != nil && configs.ValidName(k.Config)) {
			return fmt.Errorf("%s has no configuration %q (want one of %s)", stack, k.Config, strings.Join(names, ", "))
		}
		return nil
	}
}

// Unjudged are the configurations the pins of stack name that no column
// of the suite runs: a user's pins may name a configuration of theirs a
// narrower run leaves out, and such pins are kept and not judged.
func (s Suite) Unjudged(p pins.Pins, stack string) []string {
	var out []string
	for _, pin := range p.All() {
		if pin.Config == configServer || slices.Contains(out, pin.Config) {
			continue
		}
		if !slices.ContainsFunc(s.allColumns(), func(c column) bool { return c.Stack == stack && c.config == pin.Config }) {
			out = append(out, pin.Config)
		}
	}
	return out
}

// Observe records the outcome of invariant inv as a stable field and for
// the judgement.
func (g *T) Observe(inv string, o outcome.Outcome) {
	g.obs = append(g.obs, record(g.T, g.pins, pins.Key{Config: g.Col.config, Scenario: g.Scenario.Name, Invariant: inv}, o))
}

// record records the outcome o of k's invariant as an Outcome field
// (INV:=violated) and returns it as an observation. A violation pinned as
// happening sometimes is recorded as outcome.Sometimes, and this run's
// outcome as the volatile field INV_this_run: either may be seen. The
// scenario failed unless the outcome agreed with the stack's pins.
func record(t *scenario.T, p pins.Pins, k pins.Key, o outcome.Outcome) outcome.Observation {
	v := o
	if p.Sometimes(k) && (o == outcome.Holds || o == outcome.Violated) {
		v = outcome.Sometimes
	}
	t.Fields = append(t.Fields, report.Field{Key: k.Invariant, Value: v.String(), Kind: report.Outcome})
	if v == outcome.Sometimes {
		t.Volatile(k.Invariant+"_this_run", o)
	}
	return outcome.Observation{Invariant: k.Invariant, Outcome: o}
}

// Holds is Holds when ok, else Violated.
func Holds(ok bool) outcome.Outcome {
	if ok {
		return outcome.Holds
	}
	return outcome.Violated
}

// Fault is one fault, as the gRPC side's rule and as the reference
// column's rule on rpcbench's wire; rb is "" when rpcbench's wire has no
// equivalent, and the invariants that need the fault are then
// unsupported in the reference column.
type Fault struct{ GRPC, RB string }

// Start starts the server with the scenario's fault (runGRPC has started
// the adapter of an adapter column). It reports false in the reference column when the
// fault has no equivalent there: the scenario then observes its
// invariants as unsupported.
func (g *T) Start() bool { return g.startWith(g.Opts) }

// StartIn is start with the server inside test host h, bound to its
// address.
func (g *T) StartIn(h *nethost.Host) bool {
	o := g.Opts
	o.Addr, o.Exec = h.Addr.String()+":0", h.Exec
	return g.startWith(o)
}

// startWith is start with the server's options o.
func (g *T) startWith(o scenario.ServerOpts) bool {
	f := g.Scenario.Fault
	o.GRPC = true
	if g.Scenario.NoServer {
		addr, err := scenario.FreeAddr()
		if err != nil {
			g.Fatalf("free address: %v", err)
		}
		g.Target = addr
		if g.Col.Stack == StackRPCBench {
			g.RB = g.Client(addr, g.ReferenceConfig())
		}
		return true
	}
	if g.Scenario.Proxy != "" {
		g.startProxied()
		return true
	}
	if g.Col.Stack == StackRPCBench {
		if g.Scenario.unsupportedIn(g.Col) {
			return false
		}
		if f.RB != "" {
			o.Faults = []string{f.RB}
		}
		g.S = g.StartServer(o)
		g.Target = g.S.Addr
		g.RB = g.Client(g.S.Addr, g.ReferenceConfig())
		return true
	}
	if f.GRPC != "" {
		o.GRPCFaults = []string{f.GRPC}
	}
	g.S = g.StartServer(o)
	g.Target = g.S.Addr
	return true
}

// startProxied starts grpc-go's server adapter (package sut: the
// Bank in grpc-go, with no fault of its own), and the fault proxy in
// front of it with the scenario's rule; the calls go to the proxy, and
// what executed is read from the adapter's exec lines. When the
// scenario ends, the proxy's record of every attempt, tied into calls
// and judged, goes to its log.
func (g *T) startProxied() {
	rule, err := proxy.ParseRule(g.Scenario.Proxy)
	if err != nil {
		g.Fatalf("%v", err)
	}
	argv := g.Env.Adapters[StackGRPCGo].Server
	if len(argv) == 0 {
		g.Errored("no server adapter for %s: build it with ./build.sh", StackGRPCGo)
	}
	logf, err := os.Create(filepath.Join(g.Env.LogDir, report.SUTLog(g.Name)))
	if err != nil {
		g.Fatalf("server adapter log: %v", err)
	}
	g.Cleanup(func() { logf.Close() })
	lines, err := os.Create(filepath.Join(g.Env.LogDir, report.SUTRecord(g.Name)))
	if err != nil {
		g.Fatalf("server adapter record: %v", err)
	}
	g.Cleanup(func() { lines.Close() })
	up, err := sut.Start(g.Ctx, sut.Spec{Bin: argv[0], Args: argv[1:], Scenario: g.Name, Stderr: logf, Lines: lines, Env: g.Env.AdapterEnviron()})
	if err != nil {
		g.Errored("%v", err)
	}
	g.Cleanup(func() {
		if err := up.Close(); err != nil && len(g.Errors) == 0 {
			g.Errors = append(g.Errors, err.Error())
		}
	})
	if info := up.Info(); info.Stack != StackGRPCGo {
		g.Errored("server adapter %s serves %s, not %s", strings.Join(argv, " "), info.Stack, StackGRPCGo)
	}
	addr := up.Info().Addr
	p, err := proxy.Listen("127.0.0.1:0", proxy.Config{Upstream: addr, Rules: []*proxy.Rule{rule}})
	if err != nil {
		g.Fatalf("%v", err)
	}
	go p.Serve()
	g.Proxy, g.Upstream, g.Target = p, up, p.Addr()
	g.Cleanup(func() {
		p.Close()
		f, err := os.Create(filepath.Join(g.Env.LogDir, report.ProxyLog(g.Name)))
		if err != nil {
			g.Errors = append(g.Errors, "proxy log: "+err.Error())
			return
		}
		defer f.Close()
		calls, _ := proxy.Group(p.Attempts())
		fmt.Fprintf(f, "rpcbench proxy %s -> %s (grpc-go's server adapter), rule %q; executions are the adapter's exec lines', not the proxy's\n\n", p.Addr(), addr, rule)
		vs := proxy.Judge(calls, proxy.JudgeOptions{Slack: 500 * time.Millisecond})
		proxy.WriteCalls(f, vs, "")
		fmt.Fprintln(f)
		proxy.WriteAttempts(f, vs)
	})
}

// syncUpstream waits until the server adapter behind the proxy has
// written every exec line of what it executed so far: it makes a get of
// its own, directly, and awaits that get's exec line, which the adapter
// writes under the bank's lock after every earlier one.
func (g *T) syncUpstream() {
	g.syncs++
	name := fmt.Sprintf("%s-sync-%d", g.Name, g.syncs)
	c, err := rawgrpc.Dial(g.Ctx, g.Upstream.Info().Addr)
	if err != nil {
		g.Errored("sync: %v", err)
	}
	defer c.Close()
	st, err := c.Open(rawgrpc.Request{Method: "Get", Call: name, Timeout: "10S", Message: rawgrpc.GetRequest("acct-sync", 0, 0)})
	if err != nil {
		g.Errored("sync: %v", err)
	}
	ctx, cancel := context.WithTimeout(g.Ctx, 10*time.Second)
	defer cancel()
	if r, err := st.Wait(ctx); err != nil || r.Outcome() != "OK" {
		g.Errored("sync: the get ended %s, %v", r.Outcome(), err)
	}
	if _, err := g.Upstream.Await(ctx, func(e sut.Event) bool { return e.Type == "exec" && e.Call == name }); err != nil {
		g.Errored("sync: %v", err)
	}
}

// upstreamExecs counts the debits of account the server adapter behind
// the proxy executed, by its exec lines.
func (g *T) upstreamExecs(account string) int {
	g.syncUpstream()
	n := 0
	for _, e := range g.Upstream.Events() {
		if e.Type == "exec" && e.Method == "Debit" && e.Account == account {
			n++
		}
	}
	return n
}

// ProxyRuleFired counts the attempts the proxy's rule took.
func (g *T) ProxyRuleFired() int {
	n := 0
	for _, a := range g.Proxy.Attempts() {
		if a.Rule != "" {
			n++
		}
	}
	return n
}

// ReferenceConfig is rpcbench's own client's configuration in the
// reference column: its defaults, hedging idempotent calls as the hedged
// configuration does (3 attempts, 100ms apart) in the column of that
// name, and with the per-attempt configuration's 200ms attempt timeout
// in that one, and with the keepalive configuration's pings in the
// keepalive one.
func (g *T) ReferenceConfig() client.Config {
	cfg := client.DefaultConfig()
	switch g.Col.config {
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
func (g *T) startAdapter(stack string) *cut.Adapter {
	argv := g.Env.Adapters[stack].Client
	if len(argv) == 0 {
		g.Errored("no adapter binary for %s: build it with ./build.sh", stack)
	}
	logf, err := os.Create(filepath.Join(g.Env.LogDir, report.AdapterLog(g.Name)))
	if err != nil {
		g.Fatalf("adapter log: %v", err)
	}
	g.Cleanup(func() { logf.Close() })
	a, err := cut.Start(g.Ctx, cut.Spec{Bin: argv[0], Args: argv[1:], Scenario: g.Name, Stderr: logf, Env: g.Env.AdapterEnviron()})
	if err != nil {
		g.Errored("%v", err)
	}
	g.Cleanup(func() {
		if err := a.Close(); err != nil && len(g.Errors) == 0 {
			g.Errors = append(g.Errors, err.Error())
		}
	})
	info := a.Info()
	g.Field("version", info.Version)
	return a
}

// Call is one call a grpc scenario makes: a get or a debit of amount on
// account, within deadline, the handler sleeping SleepMs first.
type Call struct {
	Method   string // bank.MethodGet or bank.MethodDebit
	Account  string
	Amount   int64
	Deadline time.Duration
	SleepMs  int64
	// WaitForReady sets the call's wait-for-ready; rpcbench's client has
	// no such option.
	WaitForReady bool
	// Attempt is rpcbench's client's attempt timeout in the reference
	// column, 0 for its default; adapters have none but the deadline.
	Attempt time.Duration
}

// Answer is what a caller learned of a call, and how many requests for
// it reached the server.
type Answer struct {
	// Code is the status as the caller saw it: a gRPC code's name, or in
	// the reference column rpcbench's status, whose OK, UNAVAILABLE and
	// DEADLINE_EXCEEDED mean what gRPC's do, and UNKNOWN for an outcome
	// its client reports as unknown.
	Code string
	// Account is the account the answer names; "" unless code is OK.
	Account string
	// Sent is when the harness sent the call, by its own clock: it
	// began writing the call line to the adapter, or, in the reference
	// column, called rpcbench's client. The call cannot have started
	// before.
	Sent time.Time
	// Elapsed is how long the call took by the harness's clock: from
	// Sent to reading the adapter's result line (cut.Result.Elapsed), or
	// rpcbench's client's own measure of its call, made in this process.
	// A verdict on time rests on it.
	Elapsed time.Duration
	// Claimed is the adapter's own elapsed_ms, a report recorded beside
	// Elapsed and never judged (cut refuses one longer than Elapsed);
	// zero in the reference column, which has no adapter.
	Claimed time.Duration
	// Requests counts the requests the server received for the call:
	// its ATTEMPT events on the gRPC side, the increase of its method's
	// request counter on rpcbench's wire.
	Requests int
}

// Do makes c in the column: through the adapter, or through rpcbench's
// client. A debit is keyed in a column that keys debits.
func (g *T) Do(c Call) Answer { return g.DoAll([]Call{c})[0] }

// DoAll makes the calls at once and returns their answers in order. An
// answer's requests are counted only when there is one call.
func (g *T) DoAll(cs []Call) []Answer { return g.Begin(cs).Wait() }

// pending are calls begun and not yet waited for.
type pending struct {
	g     *T
	cs    []Call
	names []string
	wg    sync.WaitGroup
	// raws are the adapter's results, rs rpcbench's client's and sent
	// when each of its calls was made: written by the calls' goroutines,
	// read after wg.Wait.
	raws          []rawResult
	rs            []client.Result
	sent          []time.Time
	before, after scenario.Counters
}

type rawResult struct {
	r   cut.Result
	err error
}

// Begin starts the calls, each on a goroutine of its own, and returns
// at once: the scenario may await the server's log meanwhile, and must
// call wait. A debit is keyed in a column that keys debits.
func (g *T) Begin(cs []Call) *pending {
	p := &pending{g: g, cs: cs, names: make([]string, len(cs))}
	keys := make([]string, len(cs))
	for i, c := range cs {
		g.calls++
		p.names[i] = fmt.Sprintf("%s-%d", g.Name, g.calls)
		if c.Method == bank.MethodDebit && g.Col.grpc.Key {
			keys[i] = "key-" + p.names[i]
		}
	}
	if g.Adapter == nil {
		p.beginRPCBench(keys)
		return p
	}
	p.raws = make([]rawResult, len(cs))
	for i, c := range cs {
		method, req := "rpcbench.bank.v1.Bank/Get", map[string]any{"account": c.Account}
		if c.Method == bank.MethodDebit {
			method, req = "rpcbench.bank.v1.Bank/Debit", map[string]any{"account": c.Account, "amount": fmt.Sprint(c.Amount)}
		}
		if c.SleepMs > 0 {
			req["sleepMs"] = fmt.Sprint(c.SleepMs)
		}
		body, err := json.Marshal(req)
		if err != nil {
			g.Fatalf("request: %v", err)
		}
		cc := cut.Call{Channel: g.Col.grpc.Channel("ch1", g.Target), Method: method,
			Request: body, Deadline: c.Deadline, Name: p.names[i], Key: keys[i], WaitForReady: c.WaitForReady || g.Col.grpc.WaitForReady}
		p.wg.Go(func() {
			r, err := g.Adapter.Do(g.Ctx, cc)
			p.raws[i] = rawResult{r, err}
		})
	}
	return p
}

// Wait waits for the calls begun and returns their answers in order.
func (p *pending) Wait() []Answer {
	out := p.wait()
	p.g.answers = append(p.g.answers, out...)
	return out
}

func (p *pending) wait() []Answer {
	g := p.g
	p.wg.Wait()
	if g.Adapter == nil {
		return p.waitRPCBench()
	}
	var evs []serverapi.Event
	if len(p.cs) == 1 && g.S != nil {
		evs = g.Events(g.S)
	}
	var starts []sut.Event
	if g.Upstream != nil {
		g.syncUpstream()
		starts = g.Upstream.Events()
	}
	out := make([]Answer, len(p.cs))
	for i, rw := range p.raws {
		if rw.err != nil {
			g.Errored("%v", rw.err)
		}
		a := Answer{Code: rw.r.Code.String(), Sent: rw.r.Sent, Elapsed: rw.r.Elapsed, Claimed: rw.r.Claimed}
		if rw.r.Code == cut.OK {
			var resp struct{ Account string }
			if err := json.Unmarshal(rw.r.Response, &resp); err != nil {
				g.Errored("adapter %s answered %q, not an AccountReply: %v", g.Col.Stack, rw.r.Response, err)
			}
			a.Account = resp.Account
		}
		a.Requests = scenario.CountEvents(evs, func(e serverapi.Event) bool {
			return e.Name == serverapi.EventAttempt && e.Text(serverapi.KeyCall) == p.names[i]
		})
		for _, e := range starts {
			if e.Type == "start" && e.Call == p.names[i] {
				a.Requests++
			}
		}
		out[i] = a
	}
	return out
}

// beginRPCBench starts the calls with rpcbench's own client on its own
// wire.
func (p *pending) beginRPCBench(keys []string) {
	g := p.g
	if g.S != nil {
		p.before = g.Counters(g.S)
	}
	p.rs = make([]client.Result, len(p.cs))
	p.sent = make([]time.Time, len(p.cs))
	for i, c := range p.cs {
		rc := scenario.GetCall(c.Account)
		if c.Method == bank.MethodDebit {
			rc = scenario.DebitCall(c.Account, int(c.Amount), keys[i])
		}
		if c.SleepMs > 0 {
			rc.Payload = fmt.Appendf(rc.Payload, " sleep=%d", c.SleepMs)
		}
		rc.Timeout = c.Deadline
		if c.Attempt > 0 {
			rc.AttemptTimeout = c.Attempt
		}
		p.wg.Go(func() {
			p.sent[i] = time.Now()
			p.rs[i] = g.RB.Do(g.Ctx, rc)
		})
	}
}

func (p *pending) waitRPCBench() []Answer {
	g := p.g
	if g.S != nil {
		p.after = g.Counters(g.S)
	}
	out := make([]Answer, len(p.cs))
	for i, r := range p.rs {
		a := Answer{Code: r.Status.String(), Sent: p.sent[i], Elapsed: r.Elapsed}
		if r.Status == proto.StatusOK {
			a.Account = scenario.PayloadFields(r)["account"]
		}
		if len(p.cs) == 1 {
			b, e := p.before, p.after
			a.Requests = int(e.RequestsDebit - b.RequestsDebit + e.RequestsGet - b.RequestsGet)
		}
		out[i] = a
	}
	return out
}

// Elapsed records how long a took by the harness's clock as the
// volatile field name, and in an adapter column what the adapter
// claimed as name+"Claimed": a verdict on time rests on the first.
func (g *T) Elapsed(name string, a Answer) {
	g.Volatile(name, scenario.Millis(a.Elapsed))
	if g.Adapter != nil {
		g.Volatile(name+"Claimed", scenario.Millis(a.Claimed))
	}
}

// Executions counts the debits of account the server's log shows
// executed: EXEC events with status OK, on either wire.
func (g *T) Executions(account string) int {
	if g.Upstream != nil {
		return g.upstreamExecs(account)
	}
	return scenario.CountEvents(g.Events(g.S), func(e serverapi.Event) bool {
		return e.Name == serverapi.EventExec && e.Text(serverapi.KeyMethod) == bank.MethodDebit &&
			e.Text(serverapi.KeyAccount) == account && e.Text(serverapi.KeyStatus) == proto.StatusOK.String()
	})
}

// grpcAttemptTimeout is the per-attempt configuration's
// perAttemptRecvTimeout, and the reference column's attempt timeout in
// it.
const grpcAttemptTimeout = 200 * time.Millisecond

// grpcKeepalive is the keepalive configuration's pings, which the
// reference column's client makes too.
func grpcKeepalive() cut.Keepalive {
	for _, c := range configs.Builtin() {
		if c.Keepalive != nil {
			return *c.Keepalive
		}
	}
	panic("cases: no gRPC configuration has a keepalive")
}

// Unsupported observes every invariant in invs as unsupported: the
// column has no equivalent of the scenario's fault.
func (g *T) Unsupported(why string, invs ...string) {
	g.Field("unsupported", why)
	g.lacks = why
	for _, inv := range invs {
		g.Observe(inv, outcome.Unsupported)
	}
}
