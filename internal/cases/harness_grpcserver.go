package cases

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
	// invSrvExpired: work whose deadline had passed when it reached the
	// server was not executed.
	invSrvExpired = "srv_expired_not_executed"
	// invSrvOKIffExec: the answer tells what happened: a debit answered
	// OK was executed, and one executed was answered OK.
	invSrvOKIffExec = "srv_ok_iff_executed"
	// invSrvCancel: a call reset with RST_STREAM(CANCEL) while its
	// handler waited: the handler's wait ended within a bound, and it did
	// not execute.
	invSrvCancel = "srv_cancel_stops_handler"
	// invSrvDeadline: a handler still waiting when its deadline passed
	// ended unexecuted within a bound. What the client was told (a
	// DEADLINE_EXCEEDED, or grpc-go's RST_STREAM(CANCEL)) is recorded.
	invSrvDeadline = "srv_deadline_stops_handler"
	// invSrvPropagated: the handler's deadline is the request's
	// grpc-timeout, less at most what reaching it took.
	invSrvPropagated = "srv_deadline_propagated"
	// invSrvIsolated: a malformed frame or message ended only its own
	// stream or connection: a call on another was served.
	invSrvIsolated = "srv_bad_input_isolated"
	// invSrvOversize: a message announced over the server's size limit
	// was refused before its body had been sent, unexecuted.
	invSrvOversize = "srv_oversize_refused"
	// invSrvLogBank: every account's balance at the end is the opening
	// balance less the debits the server's record says it executed.
	invSrvLogBank = "log_matches_bank"
)

// serverInvariants are every invariant a server pin may name.
var serverInvariants = []string{invSrvExpired, invSrvOKIffExec, invSrvCancel, invSrvDeadline, invSrvPropagated, invSrvIsolated,
	invSrvOversize, invSrvLogBank}

// srvScenario is one grpcserver scenario, before it is spread over the
// server columns.
type srvScenario struct {
	name, doc string
	run       func(g *srvT)
	// invs are the invariants it observes, each once; log_matches_bank
	// is every scenario's and is not listed.
	invs []string
}

// serverStacks are the server columns' stacks: rpcserver, then each
// adapter stack.
func serverStacks() []string { return append([]string{StackRPCServer}, cut.StackNames()...) }

// srvCases spreads each scenario over the server columns.
func srvCases(scs []srvScenario) []Case {
	var out []Case
	for _, sc := range scs {
		for _, stack := range serverStacks() {
			c := Case{Name: sc.name + "_" + strings.ReplaceAll(stack, "-", ""), Group: GroupGRPC,
				Doc:    sc.doc + " (" + stack + " server)",
				Column: Column{Scenario: sc.name, Stack: stack, Config: configServer}}
			if stack != StackRPCServer {
				c.Needs = []string{NeedsAdapter(stack)}
				c.NoServer = true
			}
			c.run = func(t *T) { runSrv(t, sc, stack) }
			out = append(out, c)
		}
	}
	return out
}

// srvT is a grpcserver scenario running in one column.
type srvT struct {
	*T
	sc    srvScenario
	stack string
	addr  string
	rpc   *server     // rpcserver's column
	sut   *sut.Server // an adapter's
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
func runSrv(t *T, sc srvScenario, stack string) {
	g := &srvT{T: t, sc: sc, stack: stack, sent: map[string]int64{}, accounts: map[string]string{}}
	t.Field("scenario", sc.name)
	t.Field("stack", stack)
	t.Field("config", configServer)
	p, err := loadPins(stack)
	if err != nil {
		t.Errored("%v", err)
	}
	g.pins = p
	g.start()
	sc.run(g)
	g.logMatchesBank()
	g.checkRecord()
	g.observedAll()
	t.judge(p.Judge(configServer, sc.name, g.obs), "")
}

// start starts the column's server: rpcserver's gRPC side, or the
// stack's adapter in serve mode, its stderr and its lines in the log
// directory, stopped when the scenario ends.
func (g *srvT) start() {
	if g.stack == StackRPCServer {
		g.rpc = g.startServer(serverOpts{GRPC: true})
		g.addr = g.rpc.Addr
		return
	}
	bin := g.env.Adapters[g.stack]
	if bin == "" {
		g.Errored("no adapter binary for %s: build it with ./build.sh", g.stack)
	}
	logf := g.logFile(report.SUTLog(g.name))
	lines := g.logFile(report.SUTRecord(g.name))
	s, err := sut.Start(g.ctx, sut.Spec{Bin: bin, Scenario: g.name, Stderr: logf, Lines: lines})
	if err != nil {
		g.Errored("%v", err)
	}
	g.cleanup(func() {
		if err := s.Close(); err != nil && len(g.errors) == 0 {
			g.errors = append(g.errors, err.Error())
		}
	})
	g.sut = s
	info := s.Info()
	if info.Stack != g.stack {
		g.Errored("server adapter %s serves %s, not %s: its column's pins are not its own", bin, info.Stack, g.stack)
	}
	g.addr = info.Addr
	g.Field("version", info.Version)
}

func (g *srvT) logFile(name string) *os.File {
	f, err := os.Create(filepath.Join(g.env.LogDir, name))
	if err != nil {
		g.Fatalf("log: %v", err)
	}
	g.cleanup(func() { f.Close() })
	return f
}

// observe records inv's outcome as a stable field and for the judgement.
func (g *srvT) observe(inv string, o outcome.Outcome) {
	g.obs = append(g.obs, g.record(g.pins, pins.Key{Config: configServer, Scenario: g.sc.name, Invariant: inv}, o))
}

// observedAll fails the scenario unless it observed each invariant it
// declares, and log_matches_bank, once.
func (g *srvT) observedAll() {
	g.observedExactly(g.obs, append(slices.Clone(g.sc.invs), invSrvLogBank))
}

// checkRecord, for an adapter, shuts the server down (its graceful
// stop lets every handler end) and reads the rest of its record: an
// adapter that broke the protocol is an ERROR; a handler of the
// scenario's that started after the judgement read the record, which no
// sync can rule out for a library that answers before its handler
// runs, fails the case rather than pass it unjudged; and an exec must
// carry the amount the harness sent.
func (g *srvT) checkRecord() {
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
			g.Errored("server adapter %s: call %s's exec says amount %d, the harness sent %d", g.env.Adapters[g.stack], e.Call, e.Amount, amount)
		}
		if i >= g.judged && len(g.failures) == 0 && (e.Type == "start" || e.Type == "exec") {
			g.Check(false, "call %s's handler wrote %s after the judgement read the record: it was not judged", e.Call, e.Type)
		}
	}
}

// brokeProtocol ends the scenario as an ERROR when the adapter has
// broken its protocol; the harness's own trouble with it is then not a
// finding.
func (g *srvT) brokeProtocol() {
	if g.sut != nil && g.sut.Err() != nil {
		g.Errored("%v", g.sut.Err())
	}
}

// dial opens a raw connection to the server, closed when the scenario
// ends. For an adapter, an address that takes no connection is its
// breach of the protocol, an ERROR.
func (g *srvT) dial() *rawgrpc.Conn {
	c, err := rawgrpc.Dial(g.ctx, g.addr)
	if err != nil {
		g.brokeProtocol()
		if g.sut != nil {
			g.Errored("server adapter %s announced %s, which takes no connection: %v", g.env.Adapters[g.stack], g.addr, err)
		}
		g.Fatalf("dial %s: %v", g.addr, err)
	}
	g.cleanup(func() { c.Close() })
	return c
}

// name returns a new call name, and notes the account and amount of a
// debit.
func (g *srvT) callName(account string, amount int64) string {
	g.calls++
	name := fmt.Sprintf("%s-%d", g.name, g.calls)
	g.accounts[name] = account
	g.sent[name] = amount
	return name
}

// debitSpec is a debit a grpcserver scenario opens.
type debitSpec struct {
	amount int64
	// timeout is the grpc-timeout, "" for none.
	timeout string
	// sleepMs and workMs are the request's sleep_ms and work_ms: the
	// handler's wait that watches its context, and its work that does
	// not.
	sleepMs, workMs int64
	// hold sends only the HEADERS.
	hold bool
}

// debit opens d on account.
func (g *srvT) debit(c *rawgrpc.Conn, account string, d debitSpec) (*rawgrpc.Stream, string) {
	name := g.callName(account, d.amount)
	st, err := c.Open(rawgrpc.Request{Method: "Debit", Call: name, Timeout: d.timeout,
		Message: rawgrpc.DebitRequest(account, d.amount, d.sleepMs, d.workMs), Hold: d.hold})
	if err != nil {
		g.Fatalf("open %s: %v", name, err)
	}
	return st, name
}

// get opens a get of account under timeout.
func (g *srvT) get(c *rawgrpc.Conn, account, timeout string) (*rawgrpc.Stream, string) {
	name := g.callName(account, 0)
	st, err := c.Open(rawgrpc.Request{Method: "Get", Call: name, Timeout: timeout, Message: rawgrpc.GetRequest(account, 0, 0)})
	if err != nil {
		g.Fatalf("open %s: %v", name, err)
	}
	return st, name
}

// answerWithin is what the stream ended with within d; ok is false if it
// had not ended by then.
func (g *srvT) answerWithin(st *rawgrpc.Stream, d time.Duration) (r rawgrpc.Result, ok bool) {
	ctx, cancel := context.WithTimeout(g.ctx, d)
	defer cancel()
	r, err := st.Wait(ctx)
	return r, err == nil
}

// answer is the stream's end, which must come within settleTimeout.
func (g *srvT) answer(st *rawgrpc.Stream, what string) rawgrpc.Result {
	r, ok := g.answerWithin(st, settleTimeout)
	if !ok {
		g.Fatalf("%s: no answer within %v", what, settleTimeout)
	}
	return r
}

// handled is what the server's record says of one call's handlers.
type handled struct {
	started bool
	// deadlineMs is the first handler's deadline on entry; nil without
	// one.
	deadlineMs *float64
	// execs counts the call's executions, amount sums what they debited.
	execs  int
	amount int64
	// ended: every handler started has ended (rpcserver: by an EXEC, an
	// EXPIRED or a CANCELED line); ctx is the last one's state.
	ended bool
	ctx   string
	// took is how long the last handler ran, by when the harness read
	// its start and end lines; 0 for rpcserver, whose log says waited.
	took time.Duration
}

// handledOf reads what the server's record says of call.
func (g *srvT) handledOf(call string) handled {
	var h handled
	if g.sut != nil {
		open := 0
		var startAt time.Time
		for _, e := range g.sut.Events() {
			if e.Call != call {
				continue
			}
			switch e.Type {
			case "start":
				if !h.started {
					h.deadlineMs = e.DeadlineMs
				}
				h.started = true
				startAt = e.At
				open++
			case "exec":
				h.execs++
				h.amount += e.Amount
			case "end":
				open--
				h.ctx = e.Ctx
				h.took = e.At.Sub(startAt)
			}
		}
		h.ended = h.started && open == 0
		return h
	}
	ends := 0
	for _, e := range g.events(g.rpc) {
		if e.Text(serverapi.KeyCall) != call {
			continue
		}
		switch e.Name {
		case serverapi.EventAttempt:
			if !h.started {
				if b, ok := e.Int(serverapi.KeyBudget); ok && b >= 0 {
					ms := float64(b)
					h.deadlineMs = &ms
				}
			}
			h.started = true
		case serverapi.EventExec:
			ends++
			h.ctx = sut.CtxActive
			if e.Text(serverapi.KeyStatus) == "OK" {
				h.execs++
				h.amount += g.sent[call]
			}
		case serverapi.EventExpired:
			ends++
			h.ctx = sut.CtxDeadlineExceeded
		case serverapi.EventCanceled:
			ends++
			h.ctx = sut.CtxCancelled
		}
		if w, ok := e.Int(serverapi.KeyWaited); ok && e.Name != serverapi.EventAttempt {
			h.took = time.Duration(w) * time.Millisecond
		}
	}
	h.ended = h.started && ends > 0
	return h
}

// awaitEnded waits up to d for every handler of call the server started
// to have ended, and returns what its record says then.
func (g *srvT) awaitEnded(call string, d time.Duration) handled {
	var h handled
	waitFor(d, func() bool {
		h = g.handledOf(call)
		return h.ended
	})
	return h
}

// sync reads an account of its own with a get and waits until the
// server's record shows that get executed. The protocol has each exec
// line written under the bank's lock, so every execution before the
// get's is in the record by then, whatever the order of the answers.
// rpcserver logs EXEC after its store's lock, but before it answers:
// every debit a scenario makes is answered, or its handler has ended,
// before the scenario syncs.
func (g *srvT) sync() {
	g.calls++
	name := fmt.Sprintf("%s-sync-%d", g.name, g.calls)
	st, err := g.syncConn().Open(rawgrpc.Request{Method: "Get", Call: name, Message: rawgrpc.GetRequest("acct-sync", 0, 0)})
	if err != nil {
		g.Fatalf("sync: %v", err)
	}
	if r := g.answer(st, "the sync get"); r.Outcome() != "OK" {
		g.Fatalf("the sync get ended %s, want OK", r.Outcome())
	}
	g.awaitExec(name)
}

// syncConn is the connection of the harness's own calls, opened once.
func (g *srvT) syncConn() *rawgrpc.Conn {
	if g.own == nil {
		g.own = g.dial()
	}
	return g.own
}

// awaitExec waits until the server's record shows call executed.
func (g *srvT) awaitExec(call string) {
	if g.sut != nil {
		ctx, cancel := context.WithTimeout(g.ctx, settleTimeout)
		defer cancel()
		if _, err := g.sut.Await(ctx, func(e sut.Event) bool { return e.Type == "exec" && e.Call == call }); err != nil {
			g.brokeProtocol()
			g.Errored("server adapter %s answered %s OK and never wrote its exec: %v", g.env.Adapters[g.stack], call, err)
		}
		return
	}
	g.awaitEvent(g.rpc, call+"'s EXEC", func(e serverapi.Event) bool {
		return e.Name == serverapi.EventExec && e.Text(serverapi.KeyCall) == call
	})
}

// settle syncs, then, for an adapter, waits until every handler of call
// that started has ended, within settleTimeout (an adapter may answer
// before its handler returns), and returns what the record says of it
// then. rpcserver answers after its handler, and logs no end of a
// request it refused before the handler.
func (g *srvT) settle(call string) handled {
	g.sync()
	h := g.handledOf(call)
	if g.sut != nil && h.started && !h.ended {
		h = g.awaitEnded(call, settleTimeout)
	}
	return h
}

// handlerTook records, as the timing it is, how long the call's handler
// ran.
func (g *srvT) handlerTook(h handled) {
	if h.ended {
		g.Volatile("handler_ms", h.took.Milliseconds())
	}
}

// okIffExecuted observes invSrvOKIffExec for a debit the server ended
// with r, which it executed h.execs times.
func (g *srvT) okIffExecuted(r rawgrpc.Result, h handled) {
	ok := r.HasCode && r.Code == 0
	g.observe(invSrvOKIffExec, holds(ok == (h.execs == 1) && h.execs <= 1))
}

// logMatchesBank reads, with a get of its own, every account the
// scenario used, and observes invSrvLogBank: each balance is the opening
// one less what the server's record says it debited before that get
// executed.
func (g *srvT) logMatchesBank() {
	if len(g.errors) > 0 || len(g.failures) > 0 {
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
		read := g.name + "-bank-" + acct
		st, err := g.syncConn().Open(rawgrpc.Request{Method: "Get", Call: read, Message: rawgrpc.GetRequest(acct, 0, 0)})
		if err != nil {
			g.Fatalf("read %s: %v", acct, err)
		}
		rep, err := g.answer(st, "the bank's read of "+acct).Reply()
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
	g.observe(invSrvLogBank, holds(holdsAll))
}

// debitedBefore sums what the server's record says it debited from
// account before the get named read executed.
func (g *srvT) debitedBefore(account, read string) int64 {
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
	for _, e := range g.events(g.rpc) {
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
