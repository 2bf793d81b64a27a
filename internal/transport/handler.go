package transport

import (
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// Request is one business request as the transport hands it to a Handler.
type Request struct {
	ID uint64
	// Conn is the server's number for the connection the request came
	// on, as its log events name it.
	Conn   uint64
	Method string
	// Key is the idempotency key; empty when the request has none.
	Key string
	// Payload is the handler's to read until Execute returns, and no
	// longer: the transport then recycles its memory for a later
	// request's, unless the answer lies in Payload (an echo), when it
	// recycles it once the answer is written. A handler that needs any of it later copies it. It is
	// never written to by anyone while lent.
	Payload  []byte
	BudgetMs uint32
	// Expiry is when the request's budget ends: its arrival plus BudgetMs.
	// A handler that waits for something must give up by then.
	Expiry time.Time
	// Done is closed when the server starts closing. A handler that
	// sleeps or waits must then stop and answer UNAVAILABLE unexecuted.
	Done <-chan struct{}
	// Deadline, when not nil, is closed when Expiry passes: Sleep then
	// stops too. Only the gRPC transport sets it, for a request whose
	// handler may block; a wait for another request (a keyed
	// duplicate's) watches Done and Expiry itself.
	Deadline <-chan struct{}
	// SleepCut is set by Sleep when it stopped early: the handler did
	// not execute, and the transport may tell why (its Done or its
	// Deadline).
	SleepCut bool
	// Attempt, set only by the gRPC transport (internal/grpcwire), says
	// which attempt of which logical call the request is, for the
	// handler's EXEC events; nil on rpcbench's own wire.
	Attempt *Attempt
}

// Attempt is what a transport whose clients retry by themselves knows of
// a request's place among its call's attempts: the keys of an EXEC event
// the gRPC side logs (serverapi.KeyCall and the rest).
type Attempt struct {
	Wire   string // serverapi.WireGRPC
	Stream uint32 // the HTTP/2 stream id
	// Call names the logical call: x-rpcbench-call, else the key, else "".
	Call string
	// N is the server's count of Call's attempts, this one included,
	// from 1; 0 when Call is "".
	N int
	// Prev and Timeout are the grpc-previous-rpc-attempts and
	// grpc-timeout headers as sent, "-" when absent.
	Prev, Timeout string
	// BudgetMs is the budget the EXEC event logs, as the ATTEMPT event
	// does: ms, -1 without a grpc-timeout (where Request.BudgetMs holds
	// the transport's "no limit", math.MaxUint32).
	BudgetMs int64
}

// Sleep pauses for d, or less if the server starts closing or r's
// Deadline passes meanwhile; it reports whether it paused the whole
// time. A handler that gets false must not execute r.
func (r *Request) Sleep(d time.Duration) bool {
	if Sleep(d, r.Done, r.Deadline) {
		return true
	}
	r.SleepCut = true
	return false
}

// Handler executes business requests; the transport knows nothing of what
// their payloads mean. Execute and MayBlock are called concurrently, from
// workers and from connections' readers.
type Handler interface {
	// Methods lists the business methods. A request for any other method
	// that is not a control method is answered INVALID_ARGUMENT by the
	// transport, unexecuted. The list must not change.
	Methods() []string
	// MayBlock reports whether executing r may sleep or wait. The
	// transport runs a request that cannot block on the connection's
	// reader, saving two goroutine hand-offs; one that can block always
	// goes through the queue, so that a reader never stops reading.
	MayBlock(r *Request) bool
	// Execute executes r and returns the answer's status and payload.
	// The payload is either dst with the answer appended (append may
	// have moved it), which the transport reuses as a later dst; or
	// memory the transport only reads, never writes, for as long as the
	// answer waits to be written: r.Payload itself, for an answer equal
	// to the request, or memory the handler never changes again. The
	// transport copies a payload in dst into its output buffer and hands
	// a large one of the other kind to the kernel from where it lies,
	// without copying it. It may answer
	// UNAVAILABLE or DEADLINE_EXCEEDED only if it did not execute r. It
	// returns proto.StatusUnknown when it cannot tell whether r executed
	// (its store's commit failed without saying whether it happened): the
	// transport then sends no answer, and the client's attempt ends, as
	// it should, with its outcome unknown.
	Execute(r *Request, dst []byte) (status proto.Status, payload []byte)
	// Counters calls add once for each of the handler's counters.
	Counters(add func(name string, v int64))
}

// Sleep sleeps d unless done or deadline is closed first, and reports
// whether it slept the whole time; a nil channel never closes. A
// transport sleeps its faults' delays and its accept back-off with it.
func Sleep(d time.Duration, done, deadline <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	case <-deadline: // nil blocks forever
		return false
	}
}
