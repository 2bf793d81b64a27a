package proxy

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/rpcbench/rpcbench/internal/grpcwire"
)

// Oracle counts executions of a service's judged methods from something
// the service keeps, never from its answers: a field of a read call, an
// SQL count, lines of its log. The proxy reads it before it forwards a
// judged attempt and after the upstream's answer to it ended (and
// Config.Settle more), holding every other judged attempt meanwhile, so
// that each move of the count belongs to one attempt.
type Oracle interface {
	// Read returns the count now.
	Read(ctx context.Context) (int64, error)
	// Executions turns a move of the count into executions, or says why
	// the move is not a whole number of them.
	Executions(moved int64) (int, error)
}

// maxHold bounds how long a judged attempt holds the gate waiting for
// the upstream's answer when its client sets no deadline and never
// gives up: past it, the oracle reads anyway, and a later execution
// counts as the attempt's late one.
const maxHold = time.Minute

// judgeState is what the oracle read last, guarded by the gate.
type judgeState struct {
	// last is the count after the latest judged attempt that was
	// forwarded, and lastA that attempt (nil before the first, or after
	// a read that failed).
	last  int64
	lastA *Attempt
	read  bool
	// unattributed counts the executions the oracle saw that no attempt
	// accounts for: a move with no attempt before it to charge, or one
	// that is no whole number of executions. Read with Unattributed.
	unattributed int
	// unreadable is set once a move could not be turned into executions
	// at all.
	unreadable bool
}

// Unattributed reports the oracle's moves that no attempt accounts for:
// how many executions (when the move was whole), and whether some move
// was not a whole number of them. Either makes the counts of every call
// untrustworthy: a judged run reports it as an ERROR.
func (p *Proxy) Unattributed() (executions int, unreadable bool) {
	p.gate <- struct{}{}
	defer func() { <-p.gate }()
	return p.judged.unattributed, p.judged.unreadable
}

func (p *Proxy) judges(method string) bool {
	return p.cfg.Oracle != nil && (p.cfg.Judged == nil || p.cfg.Judged(method))
}

// sendLocked forwards ps now, or, for a judged attempt, once the gate
// is the attempt's and the oracle has read.
func (s *session) sendLocked(ps *pstream, fields []hpack.HeaderField, end bool) {
	if !s.p.judges(ps.a.Method) {
		s.forwardLocked(ps, fields, end)
		return
	}
	s.p.mu.Lock()
	closed := s.p.closed
	if !closed {
		s.p.wg.Add(1)
	}
	s.p.mu.Unlock()
	if closed {
		return
	}
	ps.upEnd = make(chan struct{})
	fields = append([]hpack.HeaderField(nil), fields...)
	go func() {
		defer s.p.wg.Done()
		s.judgeAttempt(ps, fields, end)
	}()
}

// judgeAttempt forwards a judged attempt between two reads of the
// oracle, and records how often it executed.
func (s *session) judgeAttempt(ps *pstream, fields []hpack.HeaderField, end bool) {
	p := s.p
	select {
	case p.gate <- struct{}{}:
	case <-p.ctx.Done():
		return
	case <-s.done:
		return
	}
	defer func() { <-p.gate }()
	before, err := p.readOracle(true)
	if err != nil {
		p.record(ps.a, func(a *Attempt) { a.OracleErr = err.Error() })
	}
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		return
	default:
	}
	if ps.clientDone || s.goingAway && ps.cid > s.lastGood {
		// The client gave up before the gate opened, or the connection
		// is going away: never forwarded, never executed. A move the
		// next read sees is still the attempt's before this one.
		if !ps.clientDone {
			s.resetClientLocked(ps, http2.ErrCodeRefusedStream)
		}
		s.mu.Unlock()
		if err == nil {
			zero := 0
			p.record(ps.a, func(a *Attempt) { a.Executions = &zero })
		}
		return
	}
	p.judged.lastA = nil
	s.forwardLocked(ps, fields, end)
	s.mu.Unlock()
	hold := maxHold
	if d, err := grpcwire.ParseTimeout(ps.a.Timeout); err == nil {
		hold = min(hold, d+5*time.Second)
	}
	t := time.NewTimer(hold)
	defer t.Stop()
	select {
	case <-ps.upEnd:
	case <-t.C:
	case <-p.ctx.Done():
		return
	}
	if err != nil {
		return
	}
	if !sleepCtx(p.ctx, p.cfg.Settle) {
		return
	}
	after, aerr := p.readOracle(false)
	if aerr != nil {
		p.record(ps.a, func(a *Attempt) { a.OracleErr = aerr.Error() })
		return
	}
	n, eerr := p.cfg.Oracle.Executions(after - before)
	p.record(ps.a, func(a *Attempt) {
		if eerr != nil {
			a.OracleErr = eerr.Error()
			return
		}
		a.Executions = &n
	})
	if eerr != nil {
		p.judged.unreadable = true
		return
	}
	p.judged.lastA = ps.a
}

// readOracle reads the oracle, holding the gate. With gap, a move since
// the last judged attempt's read after its answer is a late execution
// of that attempt (its handler still ran after Settle), or of something
// else that changes the count: it is counted as the attempt's, and says
// so.
func (p *Proxy) readOracle(gap bool) (int64, error) {
	v, err := p.cfg.Oracle.Read(p.ctx)
	if err != nil {
		// What moved meanwhile can be charged to no attempt: the next
		// read starts afresh, and a move it cannot place is
		// unattributed.
		p.judged.read, p.judged.lastA = false, nil
		p.judged.unreadable = true
		return 0, fmt.Errorf("oracle: %w", err)
	}
	if gap && p.judged.read && v != p.judged.last {
		n, err := p.cfg.Oracle.Executions(v - p.judged.last)
		switch {
		case err != nil:
			p.judged.unreadable = true
			if p.judged.lastA != nil {
				p.record(p.judged.lastA, func(a *Attempt) {
					a.OracleErr = fmt.Sprintf("after its answer: %v", err)
					a.Executions = nil
				})
			}
		case p.judged.lastA == nil:
			p.judged.unattributed += n
		default:
			p.record(p.judged.lastA, func(a *Attempt) {
				if a.Executions != nil {
					total := *a.Executions + n
					a.Executions, a.Late = &total, a.Late+n
				}
			})
		}
	}
	p.judged.last, p.judged.read = v, true
	return v, nil
}

// SettleOracle reads the oracle a last time, after wait, so that an
// execution of the last judged attempt later than Settle is counted; the
// caller calls it once the workload is done, before Close.
func (p *Proxy) SettleOracle(ctx context.Context, wait time.Duration) error {
	if p.cfg.Oracle == nil {
		return nil
	}
	if !sleepCtx(ctx, wait) {
		return ctx.Err()
	}
	select {
	case p.gate <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-p.gate }()
	_, err := p.readOracle(true)
	return err
}

// pushbackLocked records the grpc-retry-pushback-ms the client was sent.
func (s *session) pushbackLocked(ps *pstream, fields []hpack.HeaderField) {
	if v := header(fields, "grpc-retry-pushback-ms"); v != "" {
		s.p.record(ps.a, func(a *Attempt) { a.Pushback = v })
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
