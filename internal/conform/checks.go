package conform

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
)

// check is one property of SPEC.md, tested from outside. run returns an
// error when the check could not go on (a dial failed, an answer never
// came); that fails it too.
type check struct {
	name string
	// short names the check's accounts and keys, after the run's tag.
	short string
	doc   string
	run   func(*probe) error
}

// checks run in this order. Each uses fresh accounts and keys and its
// own connections, so none depends on another.
var checks = []check{
	{"framing_byte_by_byte", "bb",
		"a get written one byte per write is answered OK, with its ID and its account", framingByteByByte},
	{"framing_several_per_write", "sw",
		"four gets in two writes, the first holding three and a half of them, are each answered OK under their own ID", framingSeveralPerWrite},
	{"max_frame_served", "mf",
		"a get whose frame length is exactly 65536 (padded with an unknown field) is answered OK", maxFrameServed},
	{"length_prefix_rejected", "lp",
		"on a connection whose ping was answered, a lone length prefix of 23, 65537 or 2^31-1 makes the server close it unanswered, without waiting for a body", lengthPrefixRejected},
	{"bad_frame_closes_connection", "bf",
		"debits of 1, 10 (bad magic) and 100 in one write: the connection is closed, neither later frame is answered or executed (balance 999), and another connection still answers", badFrameClosesConnection},
	{"answers_matched_by_id", "id",
		"a get that sleeps and a fast get in one write: each answer carries the ID of the request whose account it names, in whatever order they come", answersMatchedByID},
	{"expired_not_executed", "ex",
		"a debit with budgetMs 0 is answered DEADLINE_EXCEEDED and not executed (balance 1000)", expiredNotExecuted},
	{"expired_keeps_key_free", "ek",
		"a keyed debit with budgetMs 0 is answered DEADLINE_EXCEEDED without claiming its key: the same debit with a budget then executes (replayed=false, balance 990)", expiredKeepsKeyFree},
	{"idempotent_replay", "ir",
		"a keyed debit sent twice in turn: the second answer is the first's with replayed=true, budget included, and the balance moves once (990)", idempotentReplay},
	{"key_reuse_refused", "kr",
		"a key reused with another amount, or with the get method, is answered INVALID_ARGUMENT and not executed (balance 990)", keyReuseRefused},
	{"duplicate_waits_for_original", "dw",
		"a keyed debit that sleeps and its duplicate in one write: one executes, the other waits for it and gets its answer with replayed=true (balance 990)", duplicateWaitsForOriginal},
}

// wantOK fails the check unless f is an OK answer with a well-formed
// payload naming account.
func (p *probe) wantOK(what string, f proto.Frame, account string) (okAnswer, bool) {
	if f.Status != proto.StatusOK {
		p.failf("%s: answer to id %d is [%s], want OK", what, f.ID, brief(f))
		return okAnswer{}, false
	}
	a, err := parseOK(f.Payload)
	if err != nil {
		p.failf("%s: %v", what, err)
		return a, false
	}
	if a.Account != account {
		p.failf("%s: answer to id %d names account %s, want %s", what, f.ID, a.Account, account)
		return a, false
	}
	return a, true
}

// wantStatus records f's status as key and fails the check unless it is
// want.
func (p *probe) wantStatus(key string, f proto.Frame, want proto.Status, why string) bool {
	p.note(key, f.Status)
	if f.Status != want {
		p.failf("%s: answer to id %d is [%s], want %v: %s", key, f.ID, brief(f), want, why)
		return false
	}
	return true
}

func (p *probe) get(id uint64, account string, extra ...string) proto.Frame {
	return p.request(id, bank.MethodGet, "", strings.Join(append([]string{"account=" + account}, extra...), " "))
}

func debitPayload(account string, amount int, extra ...string) string {
	return strings.Join(append([]string{fmt.Sprintf("account=%s amount=%d", account, amount)}, extra...), " ")
}

func framingByteByByte(p *probe) error {
	account := p.name("a")
	w, err := p.dial()
	if err != nil {
		return err
	}
	f := p.get(1, account)
	b, err := encode(f)
	if err != nil {
		return err
	}
	w.track(f)
	for i := range b {
		if err := w.write(b[i : i+1]); err != nil {
			return fmt.Errorf("byte %d of %d: %w", i+1, len(b), err)
		}
	}
	p.note("writes", len(b))
	ans, err := w.recv()
	if err != nil {
		return err
	}
	if a, ok := p.wantOK("answer", ans, account); ok {
		expect(p, "balance", a.Balance, int64(bank.DefaultBalance), "an account starts at the default balance")
	}
	return nil
}

func framingSeveralPerWrite(p *probe) error {
	const n = 4
	w, err := p.dial()
	if err != nil {
		return err
	}
	frames := make([]proto.Frame, n)
	accounts := make([]string, n)
	for i := range frames {
		accounts[i] = p.name(fmt.Sprintf("a%d", i+1))
		frames[i] = p.get(uint64(i+1), accounts[i])
	}
	b, err := encode(frames...)
	if err != nil {
		return err
	}
	// The first write ends in the middle of the last frame.
	cut := len(b) - frames[n-1].EncodedLen()/2
	w.track(frames...)
	if err := w.write(b[:cut]); err != nil {
		return err
	}
	if err := w.write(b[cut:]); err != nil {
		return err
	}
	p.note("frames", n)
	p.note("writes", 2)
	got, order, err := w.answers(1, 2, 3, 4)
	p.note("order", idList(order))
	if err != nil {
		return err
	}
	for i, f := range frames {
		p.wantOK(fmt.Sprintf("get %d", f.ID), got[f.ID], accounts[i])
	}
	return nil
}

func maxFrameServed(p *probe) error {
	account := p.name("a")
	w, err := p.dial()
	if err != nil {
		return err
	}
	// SPEC.md: unknown keys are ignored, so "pad" only makes the frame
	// as long as a frame may be.
	f := p.get(1, account, "pad=")
	f.Payload = append(f.Payload, strings.Repeat("x", proto.MaxFrameLen+4-f.EncodedLen())...)
	p.note("frameLen", f.EncodedLen()-4)
	ans, err := w.call(f)
	if err != nil {
		return err
	}
	p.note("answer", ans.Status)
	p.wantOK("answer", ans, account)
	return nil
}

func lengthPrefixRejected(p *probe) error {
	prefixes := []uint32{proto.MinFrameLen - 1, proto.MaxFrameLen + 1, 1<<31 - 1}
	type outcome struct {
		answered []uint64
		closed   bool
		err      error
	}
	outs := make([]outcome, len(prefixes))
	ws := make([]*wire, len(prefixes))
	for i := range ws {
		var err error
		if ws[i], err = p.dial(); err != nil {
			return err
		}
	}
	// The connections wait at once, so a server that waits for the body
	// costs one timeout, not three.
	var wg sync.WaitGroup
	for i, n := range prefixes {
		w := ws[i]
		wg.Go(func() {
			// An answered ping first: the close that follows is the
			// prefix's doing, not a refusal at accept.
			if err := p.pingOn(w, 1); err != nil {
				outs[i].err = err
				return
			}
			if err := w.write(binary.BigEndian.AppendUint32(nil, n)); err != nil {
				outs[i].err = err
				return
			}
			outs[i].answered, outs[i].closed, outs[i].err = w.awaitClose()
		})
	}
	wg.Wait()
	for i, n := range prefixes {
		o := outs[i]
		key := fmt.Sprintf("prefix%d", n)
		switch {
		case o.err != nil:
			p.note(key, "error")
			p.failf("length prefix %d: %v", n, o.err)
		case len(o.answered) > 0:
			p.note(key, "answered")
			p.failf("length prefix %d: the server answered (ids %s); it must close the connection unanswered", n, idList(o.answered))
		case !o.closed:
			p.note(key, "open")
			p.failf("length prefix %d: the connection was still open when the check's time ran out: the server waits for a body it must refuse from the prefix alone", n)
		default:
			p.note(key, "closed")
		}
	}
	return nil
}

func badFrameClosesConnection(p *probe) error {
	account := p.name("a")
	bystander, err := p.dial()
	if err != nil {
		return err
	}
	if err := p.pingOn(bystander, 1); err != nil {
		return fmt.Errorf("other connection: %w", err)
	}
	w, err := p.dial()
	if err != nil {
		return err
	}
	if err := p.pingOn(w, 1); err != nil {
		return err
	}
	// The amounts tell from the balance which of the debits executed.
	amounts := map[uint64]int{2: 1, 3: 10, 4: 100}
	before, bad, after := p.request(2, bank.MethodDebit, "", debitPayload(account, 1)),
		p.request(3, bank.MethodDebit, "", debitPayload(account, 10)),
		p.request(4, bank.MethodDebit, "", debitPayload(account, 100))
	b, err := encode(before, bad, after)
	if err != nil {
		return err
	}
	magic := before.EncodedLen() + 4
	b[magic], b[magic+1] = 0xde, 0xad
	if err := w.write(b); err != nil {
		return err
	}
	answered, closed, err := w.awaitClose(bad.ID, after.ID)
	if err != nil {
		return err
	}
	p.note("answered", idList(answered))
	if i := slices.IndexFunc(answered, func(id uint64) bool { return id == bad.ID || id == after.ID }); i >= 0 {
		p.failf("id %d, the bad frame or a frame after it, was answered: nothing after a bad frame may be interpreted", answered[i])
	} else {
		expect(p, "closed", closed, true, "a bad frame closes its connection")
	}
	if err := p.pingOn(bystander, 2); err != nil {
		p.note("otherConn", "dead")
		p.failf("a connection open before the bad frame no longer answers (%v): a bad frame closes its own connection only", err)
	} else {
		p.note("otherConn", "answers")
	}
	balance, err := p.balance(account)
	if err != nil {
		return err
	}
	p.note("balance", balance)
	executed := explain(bank.DefaultBalance-balance, amounts)
	switch {
	case executed == nil:
		p.failf("balance %d is no combination of the debits sent (1, 10, 100)", balance)
	case slices.Contains(executed, bad.ID) || slices.Contains(executed, after.ID):
		p.failf("debits executed: ids %s; want only 2: the bad frame and what follows it must not be interpreted", idList(executed))
	case !slices.Contains(executed, before.ID):
		p.failf("debit 2, complete before the bad frame, did not execute; SPEC.md: frames complete before a bad one are still handled")
	}
	return nil
}

// explain returns the IDs, in order, whose amounts add up to spent, or
// nil when no subset does. Each subset of amounts must have its own sum.
func explain(spent int64, amounts map[uint64]int) []uint64 {
	ids := make([]uint64, 0, len(amounts))
	for id := range amounts {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for mask := 0; mask < 1<<len(ids); mask++ {
		var sum int64
		sub := []uint64{}
		for i, id := range ids {
			if mask&(1<<i) != 0 {
				sum += int64(amounts[id])
				sub = append(sub, id)
			}
		}
		if sum == spent {
			return sub
		}
	}
	return nil
}

func answersMatchedByID(p *probe) error {
	slow, fast := p.name("slow"), p.name("fast")
	w, err := p.dial()
	if err != nil {
		return err
	}
	s := p.get(1, slow, fmt.Sprintf("sleep=%d", p.slowMs()))
	f := p.get(2, fast)
	if err := w.send(s, f); err != nil {
		return err
	}
	got, order, err := w.answers(s.ID, f.ID)
	p.note("order", idList(order))
	if err != nil {
		return err
	}
	want := map[uint64]string{s.ID: slow, f.ID: fast}
	var crossed []string
	for _, id := range order {
		ans := got[id]
		if ans.Status != proto.StatusOK {
			p.failf("answer to id %d is [%s], want OK", id, brief(ans))
			continue
		}
		a, err := parseOK(ans.Payload)
		if err != nil {
			p.failf("answer to id %d: %v", id, err)
			continue
		}
		if a.Account != want[id] {
			crossed = append(crossed, fmt.Sprintf("the answer with id %d names account %s, which request %d asked for", id, a.Account, s.ID+f.ID-id))
		}
	}
	if len(crossed) > 0 {
		p.failf("%s: answers must be matched to requests by ID, not by order", strings.Join(crossed, ", and "))
	}
	return nil
}

func expiredNotExecuted(p *probe) error {
	account := p.name("a")
	w, err := p.dial()
	if err != nil {
		return err
	}
	f := p.request(1, bank.MethodDebit, "", debitPayload(account, 10))
	f.BudgetMs = 0
	ans, err := w.call(f)
	if err != nil {
		return err
	}
	p.wantStatus("status", ans, proto.StatusDeadlineExceeded, "a request whose budget has passed on arrival (budgetMs 0 always has) is answered DEADLINE_EXCEEDED")
	return p.expectBalance("balance", account, bank.DefaultBalance, "the expired debit must not execute")
}

func expiredKeepsKeyFree(p *probe) error {
	account, key := p.name("a"), p.name("k")
	payload := debitPayload(account, 10)
	w, err := p.dial()
	if err != nil {
		return err
	}
	expired := p.request(1, bank.MethodDebit, key, payload)
	expired.BudgetMs = 0
	ans, err := w.call(expired)
	if err != nil {
		return err
	}
	p.wantStatus("expired", ans, proto.StatusDeadlineExceeded, "a request whose budget has passed on arrival is answered DEADLINE_EXCEEDED")
	ans, err = w.call(p.request(2, bank.MethodDebit, key, payload))
	if err != nil {
		return err
	}
	p.note("retry", ans.Status)
	if a, ok := p.wantOK("retry", ans, account); ok {
		expect(p, "retryReplayed", a.Replayed, false, "a request answered before executing does not claim its key, so the same request with a budget executes")
	}
	return p.expectBalance("balance", account, bank.DefaultBalance-10, "one debit of 10 executed")
}

func idempotentReplay(p *probe) error {
	account, key := p.name("a"), p.name("k")
	payload := debitPayload(account, 10)
	w, err := p.dial()
	if err != nil {
		return err
	}
	first := p.request(1, bank.MethodDebit, key, payload)
	// A different budget: the replay must carry the original's.
	second := p.request(2, bank.MethodDebit, key, payload)
	second.BudgetMs = first.BudgetMs / 2
	ans1, err := w.call(first)
	if err != nil {
		return err
	}
	ans2, err := w.call(second)
	if err != nil {
		return err
	}
	a1, ok1 := p.wantOK("first", ans1, account)
	a2, ok2 := p.wantOK("second", ans2, account)
	if ok1 {
		expect(p, "firstReplayed", a1.Replayed, false, "the first request with a key executes")
		expect(p, "firstBudget", a1.Budget, first.BudgetMs, "an OK answer's budget is the budgetMs the executed request carried")
	}
	if ok2 {
		expect(p, "secondReplayed", a2.Replayed, true, "a later request with the same key and body is answered from the first, replayed=true")
	}
	if ok1 && ok2 && a2.Replayed && !sameExceptReplayed(a1, a2) {
		p.failf("the replay [%v] differs from the original [%v] beyond replayed", a2, a1)
	}
	return p.expectBalance("balance", account, bank.DefaultBalance-10, "the debit executed once")
}

func keyReuseRefused(p *probe) error {
	account, key := p.name("a"), p.name("k")
	payload := debitPayload(account, 10)
	w, err := p.dial()
	if err != nil {
		return err
	}
	ans, err := w.call(p.request(1, bank.MethodDebit, key, payload))
	if err != nil {
		return err
	}
	p.note("first", ans.Status)
	p.wantOK("first", ans, account)
	const why = "a key reused with a different method or payload is refused unexecuted"
	ans, err = w.call(p.request(2, bank.MethodDebit, key, debitPayload(account, 20)))
	if err != nil {
		return err
	}
	p.wantStatus("otherAmount", ans, proto.StatusInvalidArgument, why)
	ans, err = w.call(p.request(3, bank.MethodGet, key, payload))
	if err != nil {
		return err
	}
	p.wantStatus("otherMethod", ans, proto.StatusInvalidArgument, why)
	return p.expectBalance("balance", account, bank.DefaultBalance-10, "only the first debit executed")
}

func duplicateWaitsForOriginal(p *probe) error {
	account, key := p.name("a"), p.name("k")
	payload := debitPayload(account, 10, fmt.Sprintf("sleep=%d", p.slowMs()))
	w, err := p.dial()
	if err != nil {
		return err
	}
	// In one write, the duplicate arrives while the original sleeps.
	// Either may be the one that executes: the server may hand them to
	// two workers at once.
	orig, dup := p.request(1, bank.MethodDebit, key, payload), p.request(2, bank.MethodDebit, key, payload)
	if err := w.send(orig, dup); err != nil {
		return err
	}
	got, order, err := w.answers(orig.ID, dup.ID)
	p.note("order", idList(order))
	if err != nil {
		return err
	}
	a1, ok1 := p.wantOK("first", got[orig.ID], account)
	a2, ok2 := p.wantOK("second", got[dup.ID], account)
	if ok1 && ok2 {
		p.note("replayed", fmt.Sprintf("%t,%t", a1.Replayed, a2.Replayed))
		switch {
		case a1.Replayed == a2.Replayed:
			p.failf("both answers have replayed=%t: want one execution and one replay of it", a1.Replayed)
		case !sameExceptReplayed(a1, a2):
			p.failf("the replay differs from the original beyond replayed: [%v] and [%v]", a1, a2)
		}
	}
	return p.expectBalance("balance", account, bank.DefaultBalance-10, "the debit executed once")
}
