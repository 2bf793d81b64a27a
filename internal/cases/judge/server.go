package judge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/outcome"
	"github.com/rpcbench/rpcbench/internal/pins"
	"github.com/rpcbench/rpcbench/internal/rawgrpc"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/scorecard"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/sut"
)

// The grpc group also judges gRPC servers: each grpcserver scenario runs
// once per server column, rpcserver's gRPC side first, then a server
// adapter of each stack (internal/sut, adapters/SERVER-PROTOCOL.md)
// with its library's default options. rawgrpc's client sends what no
// well-behaved client would; whether something executed is read from
// the server's own record: rpcserver's log, or the adapter's exec lines,
// which log_matches_bank checks against the bank at the end of every
// scenario. Verdicts are pins.Judge's against the stack's expectations
// file, under the configuration "server".

// StackRPCServer is the first server column's stack: rpcserver's gRPC
// side.
const StackRPCServer = "rpcserver"

// configServer is the configuration name of every server column, as
// the scorecard tells server columns from clients'.
const configServer = scorecard.ConfigServer

// Invariants the grpcserver scenarios observe.
const (
	// InvSrvExpired: work whose deadline had passed when it reached the
	// server was not executed.
	InvSrvExpired = "srv_expired_not_executed"
	// InvSrvOKIffExec: the answer tells what happened: a debit answered
	// OK was executed, and one executed was answered OK.
	InvSrvOKIffExec = "srv_ok_iff_executed"
	// InvSrvCancel: a call reset with RST_STREAM(CANCEL) while its
	// handler waited: the handler's wait ended within a bound, and it did
	// not execute.
	InvSrvCancel = "srv_cancel_stops_handler"
	// InvSrvDeadline: a handler still waiting when its deadline passed
	// ended unexecuted within a bound. What the client was told (a
	// DEADLINE_EXCEEDED, or grpc-go's RST_STREAM(CANCEL)) is recorded.
	InvSrvDeadline = "srv_deadline_stops_handler"
	// InvSrvPropagated: the handler's deadline is the request's
	// grpc-timeout, less at most what reaching it took.
	InvSrvPropagated = "srv_deadline_propagated"
	// InvSrvIsolated: a malformed frame or message ended only its own
	// stream or connection: a call on another was served.
	InvSrvIsolated = "srv_bad_input_isolated"
	// InvSrvOversize: a message announced over the server's size limit
	// was refused before its body had been sent, unexecuted.
	InvSrvOversize = "srv_oversize_refused"
	// InvSrvLogBank: every account's balance at the end is the opening
	// balance less the debits the server's record says it executed.
	InvSrvLogBank = "log_matches_bank"
)

// serverInvariants are every invariant a server pin may name.
var serverInvariants = []string{InvSrvExpired, InvSrvOKIffExec, InvSrvCancel, InvSrvDeadline, InvSrvPropagated, InvSrvIsolated,
	InvSrvOversize, InvSrvLogBank}

// ServerScenario is one grpcserver scenario, before it is spread over the
// server columns.
type ServerScenario struct {
	Name, Doc string
	Run       func(g *ServerT)
	// Invs are the invariants it observes, each once; log_matches_bank
	// is every scenario's and is not listed.
	Invs []string
}

// serverStacks are the server columns' stacks: rpcserver, then each
// adapter stack.
func (s Suite) serverStacks() []string {
	if s.ServerStacks != nil {
		if len(s.ServerStacks) == 0 {
			return nil // no server judged: no rpcserver column to compare with
		}
		return append([]string{StackRPCServer}, s.ServerStacks...)
	}
	return append([]string{StackRPCServer}, cut.StackNames()...)
}

// srvCases spreads each scenario over the server columns.
func srvCases(s Suite) []scenario.Case {
	var out []scenario.Case
	for _, sc := range s.Server {
		for _, stack := range s.serverStacks() {
			c := scenario.Case{Name: sc.Name + "_" + Slug(stack), Group: s.Group,
				Doc:    sc.Doc + " (" + stack + " server)",
				Column: scenario.Column{Scenario: sc.Name, Stack: stack, Config: configServer}}
			if stack != StackRPCServer {
				c.Needs = []string{scenario.NeedsAdapter(stack)}
				c.NoServer = true
			}
			c.Body = func(t *scenario.T) { runSrv(t, s, sc, stack) }
			out = append(out, c)
		}
	}
	return out
}

// ServerT is a grpcserver scenario running in one column.
type ServerT struct {
	*scenario.T
	sc    ServerScenario
	stack string
	addr  string
	rpc   *scenario.Server // rpcserver's column
	sut   *sut.Server      // an adapter's
	obs   []outcome.Observation
	pins  pins.Pins // the stack's
	calls int
	// sent are the debit amounts the scenario sent, by call, and the
	// account of each call: what rpcserver's EXEC lines, which carry no
	// amount, are summed with.
	sent     map[string]int64
	accounts map[string]string
	own      *rawgrpc.Conn // the harness's own calls' connection
	// judged is how many of the adapter's events the judgement saw: the
	// record up to the last bank read's exec.
	judged int
}

// runSrv runs sc against stack's server and judges it against the
// stack's pins.
func runSrv(t *scenario.T, s Suite, sc ServerScenario, stack string) {
	g := &ServerT{T: t, sc: sc, stack: stack, sent: map[string]int64{}, accounts: map[string]string{}}
	t.Field("scenario", sc.Name)
	t.Field("stack", stack)
	t.Field("config", configServer)
	p, err := s.LoadPins(stack)
	if err != nil {
		t.Errored("%v", err)
	}
	g.pins = p
	g.start()
	sc.Run(g)
	g.logMatchesBank()
	g.checkRecord()
	g.observedAll()
	judge(t, p.Judge(configServer, sc.Name, g.obs), "")
}

// start starts the column's server: rpcserver's gRPC side, or the
// stack's adapter in serve mode, its stderr and its lines in the log
// directory, stopped when the scenario ends.
func (g *ServerT) start() {
	if g.stack == StackRPCServer {
		g.rpc = g.StartServer(scenario.ServerOpts{GRPC: true})
		g.addr = g.rpc.Addr
		return
	}
	argv := g.Env.Adapters[g.stack].Server
	if len(argv) == 0 {
		g.Errored("no server adapter for %s: build it with ./build.sh", g.stack)
	}
	bin := strings.Join(argv, " ")
	logf := g.logFile(report.SUTLog(g.Name))
	lines := g.logFile(report.SUTRecord(g.Name))
	s, err := sut.Start(g.Ctx, sut.Spec{Bin: argv[0], Args: argv[1:], Scenario: g.Name, Stderr: logf, Lines: lines, Env: g.Env.AdapterEnviron()})
	if err != nil {
		g.Errored("%v", err)
	}
	g.Cleanup(func() {
		if err := s.Close(); err != nil && len(g.Errors) == 0 {
			g.Errors = append(g.Errors, err.Error())
		}
	})
	g.sut = s
	info := s.Info()
	if base, _, _ := strings.Cut(g.stack, "@"); info.Stack != base {
		g.Errored("server adapter %s serves %s, not %s: its column's pins are not its own", bin, info.Stack, g.stack)
	}
	g.addr = info.Addr
	g.Field("version", info.Version)
}

// adapter names the column's server adapter in messages.
func (g *ServerT) adapter() string { return strings.Join(g.Env.Adapters[g.stack].Server, " ") }

func (g *ServerT) logFile(name string) *os.File {
	f, err := os.Create(filepath.Join(g.Env.LogDir, name))
	if err != nil {
		g.Fatalf("log: %v", err)
	}
	g.Cleanup(func() { f.Close() })
	return f
}

// Observe records inv's outcome as a stable field and for the judgement.
func (g *ServerT) Observe(inv string, o outcome.Outcome) {
	g.obs = append(g.obs, record(g.T, g.pins, pins.Key{Config: configServer, Scenario: g.sc.Name, Invariant: inv}, o))
}

// observedAll fails the scenario unless it observed each invariant it
// declares, and log_matches_bank, once.
func (g *ServerT) observedAll() {
	observedExactly(g.T, g.obs, append(slices.Clone(g.sc.Invs), InvSrvLogBank))
}

// checkRecord, for an adapter, shuts the server down (its graceful
// stop lets every handler end) and reads the rest of its record: an
// adapter that broke the protocol is an ERROR; a handler of the
// scenario's that started after the judgement read the record, which no
// sync can rule out for a library that answers before its handler
// runs, fails the case rather than pass it unjudged; and an exec must
// carry the amount the harness sent.
func (g *ServerT) checkRecord() {
	if g.sut == nil {
		return
	}
	if err := g.sut.Close(); err != nil {
		g.Errored("%v", err)
	}
	evs := g.sut.Events()
	for i, e := range evs {
		amount, ours := g.sent[e.Call]
		if !ours {
			continue
		}
		if e.Type == "exec" && e.Amount != amount {
			g.Errored("server adapter %s: call %s's exec says amount %d, the harness sent %d", g.adapter(), e.Call, e.Amount, amount)
		}
		if i >= g.judged && len(g.Failures) == 0 && (e.Type == "start" || e.Type == "exec") {
			g.Check(false, "call %s's handler wrote %s after the judgement read the record: it was not judged", e.Call, e.Type)
		}
	}
}

// brokeProtocol ends the scenario as an ERROR when the adapter has
// broken its protocol; the harness's own trouble with it is then not a
// finding.
func (g *ServerT) brokeProtocol() {
	if g.sut != nil && g.sut.Err() != nil {
		g.Errored("%v", g.sut.Err())
	}
}

// Dial opens a raw connection to the server, closed when the scenario
// ends. For an adapter, an address that takes no connection is its
// breach of the protocol, an ERROR.
func (g *ServerT) Dial() *rawgrpc.Conn {
	c, err := rawgrpc.Dial(g.Ctx, g.addr)
	if err != nil {
		g.brokeProtocol()
		if g.sut != nil {
			g.Errored("server adapter %s announced %s, which takes no connection: %v", g.adapter(), g.addr, err)
		}
		g.Fatalf("dial %s: %v", g.addr, err)
	}
	g.Cleanup(func() { c.Close() })
	return c
}

// name returns a new call name, and notes the account and amount of a
// debit.
func (g *ServerT) CallName(account string, amount int64) string {
	g.calls++
	name := fmt.Sprintf("%s-%d", g.Name, g.calls)
	g.accounts[name] = account
	g.sent[name] = amount
	return name
}

// DebitSpec is a debit a grpcserver scenario opens.
type DebitSpec struct {
	Amount int64
	// Timeout is the grpc-timeout, "" for none.
	Timeout string
	// SleepMs and WorkMs are the request's sleep_ms and work_ms: the
	// handler's wait that watches its context, and its work that does
	// not.
	SleepMs, WorkMs int64
	// Hold sends only the HEADERS.
	Hold bool
}

// Debit opens d on account.
func (g *ServerT) Debit(c *rawgrpc.Conn, account string, d DebitSpec) (*rawgrpc.Stream, string) {
	name := g.CallName(account, d.Amount)
	st, err := c.Open(rawgrpc.Request{Method: "Debit", Call: name, Timeout: d.Timeout,
		Message: rawgrpc.DebitRequest(account, d.Amount, d.SleepMs, d.WorkMs), Hold: d.Hold})
	if err != nil {
		g.Fatalf("open %s: %v", name, err)
	}
	return st, name
}

// Get opens a get of account under timeout.
func (g *ServerT) Get(c *rawgrpc.Conn, account, timeout string) (*rawgrpc.Stream, string) {
	name := g.CallName(account, 0)
	st, err := c.Open(rawgrpc.Request{Method: "Get", Call: name, Timeout: timeout, Message: rawgrpc.GetRequest(account, 0, 0)})
	if err != nil {
		g.Fatalf("open %s: %v", name, err)
	}
	return st, name
}

// AnswerWithin is what the stream ended with within d; ok is false if it
// had not ended by then.
func (g *ServerT) AnswerWithin(st *rawgrpc.Stream, d time.Duration) (r rawgrpc.Result, ok bool) {
	ctx, cancel := context.WithTimeout(g.Ctx, d)
	defer cancel()
	r, err := st.Wait(ctx)
	return r, err == nil
}

// Answer is the stream's end, which must come within SettleTimeout.
func (g *ServerT) Answer(st *rawgrpc.Stream, what string) rawgrpc.Result {
	r, ok := g.AnswerWithin(st, scenario.SettleTimeout)
	if !ok {
		g.Fatalf("%s: no answer within %v", what, scenario.SettleTimeout)
	}
	return r
}

// handled is what the server's record says of one call's handlers.
type handled struct {
	Started bool
	// DeadlineMs is the first handler's deadline on entry; nil without
	// one.
	DeadlineMs *float64
	// Execs counts the call's executions, amount sums what they debited.
	Execs  int
	amount int64
	// ended: every handler started has ended (rpcserver: by an EXEC, an
	// EXPIRED or a CANCELED line); ctx is the last one's state.
	Ended bool
	Ctx   string
	// Took is how long the last handler ran, by when the harness read
	// its start and end lines; 0 for rpcserver, whose log says waited.
	Took time.Duration
}

// HandledOf reads what the server's record says of call.
func (g *ServerT) HandledOf(call string) handled { return g.HandledOfAll([]string{call})[call] }

// HandledOfAll reads the server's record once, and returns what it says
// of each of calls: a scenario of thousands of calls reads it once, not
// once a call.
func (g *ServerT) HandledOfAll(calls []string) map[string]handled {
	hs := make(map[string]*handled, len(calls))
	for _, c := range calls {
		hs[c] = &handled{}
	}
	if g.sut != nil {
		open := map[string]int{}
		startAt := map[string]time.Time{}
		for _, e := range g.sut.Events() {
			h, ok := hs[e.Call]
			if !ok {
				continue
			}
			switch e.Type {
			case "start":
				if !h.Started {
					h.DeadlineMs = e.DeadlineMs
				}
				h.Started = true
				startAt[e.Call] = e.At
				open[e.Call]++
			case "exec":
				h.Execs++
				h.amount += e.Amount
			case "end":
				open[e.Call]--
				h.Ctx = e.Ctx
				h.Took = e.At.Sub(startAt[e.Call])
			}
		}
		out := make(map[string]handled, len(hs))
		for c, h := range hs {
			h.Ended = h.Started && open[c] == 0
			out[c] = *h
		}
		return out
	}
	ends := map[string]int{}
	for _, e := range g.Events(g.rpc) {
		call := e.Text(serverapi.KeyCall)
		h, ok := hs[call]
		if !ok {
			continue
		}
		switch e.Name {
		case serverapi.EventAttempt:
			if !h.Started {
				if b, ok := e.Int(serverapi.KeyBudget); ok && b >= 0 {
					ms := float64(b)
					h.DeadlineMs = &ms
				}
			}
			h.Started = true
		case serverapi.EventExec:
			ends[call]++
			h.Ctx = sut.CtxActive
			if e.Text(serverapi.KeyStatus) == "OK" {
				h.Execs++
				h.amount += g.sent[call]
			}
		case serverapi.EventExpired:
			ends[call]++
			h.Ctx = sut.CtxDeadlineExceeded
		case serverapi.EventCanceled:
			ends[call]++
			h.Ctx = sut.CtxCancelled
		}
		if w, ok := e.Int(serverapi.KeyWaited); ok && e.Name != serverapi.EventAttempt {
			h.Took = time.Duration(w) * time.Millisecond
		}
	}
	out := make(map[string]handled, len(hs))
	for c, h := range hs {
		h.Ended = h.Started && ends[c] > 0
		out[c] = *h
	}
	return out
}

// AwaitEnded waits up to d for every handler of call the server started
// to have ended, and returns what its record says then.
func (g *ServerT) AwaitEnded(call string, d time.Duration) handled {
	var h handled
	scenario.WaitFor(d, func() bool {
		h = g.HandledOf(call)
		return h.Ended
	})
	return h
}

// Sync reads an account of its own with a get and waits until the
// server's record shows that get executed. The protocol has each exec
// line written under the bank's lock, so every execution before the
// get's is in the record by then, whatever the order of the answers.
// rpcserver logs EXEC after its store's lock, but before it answers:
// every debit a scenario makes is answered, or its handler has ended,
// before the scenario syncs.
func (g *ServerT) Sync() {
	g.calls++
	name := fmt.Sprintf("%s-sync-%d", g.Name, g.calls)
	st, err := g.syncConn().Open(rawgrpc.Request{Method: "Get", Call: name, Message: rawgrpc.GetRequest("acct-sync", 0, 0)})
	if err != nil {
		g.Fatalf("sync: %v", err)
	}
	if r := g.Answer(st, "the sync get"); r.Outcome() != "OK" {
		g.Fatalf("the sync get ended %s, want OK", r.Outcome())
	}
	g.awaitExec(name)
}

// syncConn is the connection of the harness's own calls, opened once.
func (g *ServerT) syncConn() *rawgrpc.Conn {
	if g.own == nil {
		g.own = g.Dial()
	}
	return g.own
}

// awaitExec waits until the server's record shows call executed.
func (g *ServerT) awaitExec(call string) {
	if g.sut != nil {
		ctx, cancel := context.WithTimeout(g.Ctx, scenario.SettleTimeout)
		defer cancel()
		if _, err := g.sut.Await(ctx, func(e sut.Event) bool { return e.Type == "exec" && e.Call == call }); err != nil {
			g.brokeProtocol()
			g.Errored("server adapter %s answered %s OK and never wrote its exec: %v", g.adapter(), call, err)
		}
		return
	}
	g.AwaitEvent(g.rpc, call+"'s EXEC", func(e serverapi.Event) bool {
		return e.Name == serverapi.EventExec && e.Text(serverapi.KeyCall) == call
	})
}

// Settle syncs, then, for an adapter, waits until every handler of call
// that started has ended, within SettleTimeout (an adapter may answer
// before its handler returns), and returns what the record says of it
// then. rpcserver answers after its handler, and logs no end of a
// request it refused before the handler.
func (g *ServerT) Settle(call string) handled {
	g.Sync()
	h := g.HandledOf(call)
	if g.sut != nil && h.Started && !h.Ended {
		h = g.AwaitEnded(call, scenario.SettleTimeout)
	}
	return h
}

// HandlerTook records, as the timing it is, how long the call's handler
// ran.
func (g *ServerT) HandlerTook(h handled) {
	if h.Ended {
		g.Volatile("handler_ms", h.Took.Milliseconds())
	}
}

// OkIffExecuted observes InvSrvOKIffExec for a debit the server ended
// with r, which it executed h.execs times.
func (g *ServerT) OkIffExecuted(r rawgrpc.Result, h handled) {
	ok := r.HasCode && r.Code == 0
	g.Observe(InvSrvOKIffExec, Holds(ok == (h.Execs == 1) && h.Execs <= 1))
}

// TallySuffix ends the key of the volatile field in which a scenario
// that judges an invariant over repeated trials records how many held
// and how many were violated: <invariant>_tally~=held=<n>,violated=<n>.
// A pin marked sometimes is backed by evidence only through it (see
// Tally).
const TallySuffix = "_tally"

// Tally observes inv over trials judged one by one, held of them holding
// and violated not: it is violated when any trial was. The counts are
// recorded, as the race they are, in inv's TallySuffix field, so that
// the evidence shows both outcomes where both happen: a pin marked
// sometimes is valid only while the committed evidence's tally shows
// some trials held and some violated, and a scenario that makes one
// trial a run records no tally, so that its pins cannot be sometimes.
func (g *ServerT) Tally(inv string, held, violated int) {
	g.Volatile(inv+TallySuffix, FormatTally(held, violated))
	g.Observe(inv, Holds(violated == 0))
}

// FormatTally is a tally field's value.
func FormatTally(held, violated int) string {
	return fmt.Sprintf("held=%d,violated=%d", held, violated)
}

// ParseTally reads what FormatTally writes.
func ParseTally(s string) (held, violated int, err error) {
	if _, err := fmt.Sscanf(s, "held=%d,violated=%d", &held, &violated); err != nil || FormatTally(held, violated) != s {
		return 0, 0, fmt.Errorf("judge: tally %q, want held=<n>,violated=<n>", s)
	}
	return held, violated, nil
}

// logMatchesBank reads, with a get of its own, every account the
// scenario used, and observes InvSrvLogBank: each balance is the opening
// one less what the server's record says it debited before that get
// executed.
func (g *ServerT) logMatchesBank() {
	if len(g.Errors) > 0 || len(g.Failures) > 0 {
		return
	}
	var accounts []string
	for _, acct := range g.accounts {
		if !slices.Contains(accounts, acct) {
			accounts = append(accounts, acct)
		}
	}
	slices.Sort(accounts)
	holdsAll := true
	var got []string
	for _, acct := range accounts {
		read := g.Name + "-bank-" + acct
		st, err := g.syncConn().Open(rawgrpc.Request{Method: "Get", Call: read, Message: rawgrpc.GetRequest(acct, 0, 0)})
		if err != nil {
			g.Fatalf("read %s: %v", acct, err)
		}
		rep, err := g.Answer(st, "the bank's read of "+acct).Reply()
		if err != nil {
			g.Fatalf("read %s: %v", acct, err)
		}
		g.awaitExec(read)
		if g.sut != nil {
			g.judged = len(g.sut.Events())
		}
		want := bank.DefaultBalance - g.debitedBefore(acct, read)
		got = append(got, fmt.Sprintf("%s=%d", acct, rep.Balance))
		if rep.Balance != want {
			holdsAll = false
			g.Field("log_bank_mismatch", fmt.Sprintf("%s balance %d, the record's debits say %d", acct, rep.Balance, want))
		}
	}
	// What the balances are is the races' (how many of 100 debits ran);
	// whether they match the record is the invariant.
	g.Volatile("balances", strings.Join(got, ","))
	g.Observe(InvSrvLogBank, Holds(holdsAll))
}

// debitedBefore sums what the server's record says it debited from
// account before the get named read executed.
func (g *ServerT) debitedBefore(account, read string) int64 {
	var sum int64
	if g.sut != nil {
		for _, e := range g.sut.Events() {
			if e.Type != "exec" {
				continue
			}
			if e.Call == read {
				break
			}
			if e.Account == account {
				sum += e.Amount
			}
		}
		return sum
	}
	for _, e := range g.Events(g.rpc) {
		if e.Name != serverapi.EventExec || e.Text(serverapi.KeyAccount) != account {
			continue
		}
		if e.Text(serverapi.KeyCall) == read {
			break
		}
		if e.Text(serverapi.KeyStatus) == "OK" {
			sum += g.sent[e.Text(serverapi.KeyCall)]
		}
	}
	return sum
}
