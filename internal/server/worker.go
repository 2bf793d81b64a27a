package server

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/transport"
)

// job is a business request waiting for, or taken by, a worker.
type job struct {
	c       *conn
	f       proto.Frame
	arrival time.Time
	// canceled is set by ctl.cancel while the job waits in the queue;
	// the worker that takes it drops it unexecuted.
	canceled bool
	// queued is set while the job holds a slot of the queue and of its
	// connection's share; free gives them back.
	queued bool
}

// free gives back the slots a queued job holds, once, and does nothing
// for a job the reader runs itself. It is called before the job's answer
// goes out, whatever the answer: a client that sends its next request
// the moment an answer arrives must find its share free, not held by the
// request just answered.
func (s *Server) free(j *job) {
	if !j.queued {
		return
	}
	j.queued = false
	j.c.queued.Add(-1)
	s.queue.release()
}

// request returns the transport.Request the handler sees for j.
func request(j *job, done <-chan struct{}) transport.Request {
	f := &j.f
	return transport.Request{
		ID: f.ID, Conn: j.c.id, Method: f.Method, Key: f.Key, Payload: f.Payload, BudgetMs: f.BudgetMs,
		Expiry: j.arrival.Add(time.Duration(f.BudgetMs) * time.Millisecond),
		Done:   done,
	}
}

func (s *Server) worker() {
	defer s.wg.Done()
	var scratch []byte // payload buffer, reused across requests
	var req transport.Request
	for {
		j, ok := s.queue.pop()
		if !ok {
			return
		}
		if j.canceled {
			s.free(&j)
			s.dropCanceled(&j)
			j.c.finished()
			continue
		}
		req = request(&j, s.done)
		rf, lent, ok := s.serve(&j, &req, &scratch)
		s.free(&j) // if serve has not, having sent nothing
		if ok {
			j.c.sendFrame(&rf, lent, j.f.Payload)
			if answerSent != nil {
				answerSent()
			}
		}
		j.c.finished()
	}
}

// answerSent, when set (by tests only), is called by a worker right after
// it hands an answer to its connection: a test widens the moment between
// the answer and whatever the worker does next.
var answerSent func()

// dropCanceled answers a job that ctl.cancel marked while it waited,
// without executing it. The client has abandoned the attempt, so the
// answer is most likely dropped as late; it is sent all the same, so
// that every request gets at most one answer and a client that still
// waits learns the request did not execute.
func (s *Server) dropCanceled(j *job) {
	f := &j.f
	s.counters.canceled.Add(1)
	s.log.Info(serverapi.EventCanceled, serverapi.KeyConn, j.c.id, serverapi.KeyID, f.ID, serverapi.KeyMethod, f.Method,
		serverapi.KeyWaited, time.Since(j.arrival).Milliseconds())
	j.c.send(respond(f, proto.StatusDeadlineExceeded, "canceled before execution"))
}

// serve runs one business request, on a worker or on its connection's
// reader. The budget rule is the same on both paths: a request whose
// budget ran out before it was taken is answered DEADLINE_EXCEEDED
// unexecuted. When a fault fires or the request expired, serve sends
// whatever the connection gets itself, after freeing the job's slots,
// and returns ok false. Otherwise it returns the answer for the caller
// to send, ok true. The handler's dst is *scratch, the caller's buffer,
// which serve leaves as the next request's (see answerMemory); lent
// says the answer's payload is not in it, but memory only to be read.
func (s *Server) serve(j *job, req *transport.Request, scratch *[]byte) (rf proto.Frame, lent, ok bool) {
	f := &j.f
	budget := time.Duration(f.BudgetMs) * time.Millisecond
	if waited := time.Since(j.arrival); waited >= budget {
		s.counters.expired.Add(1)
		s.log.Warn(serverapi.EventExpired, serverapi.KeyID, f.ID, serverapi.KeyMethod, f.Method,
			serverapi.KeyBudget, f.BudgetMs, serverapi.KeyWaited, waited.Milliseconds())
		s.free(j)
		j.c.send(respond(f, proto.StatusDeadlineExceeded, fmt.Sprintf("expired before execution waited=%d", waited.Milliseconds())))
		return proto.Frame{}, false, false
	}
	rule, faulty := s.faults.Take(f.Method, notDrain)
	if faulty {
		s.counters.faultsFired.Add(1)
		s.log.Info(serverapi.EventFault, serverapi.KeyKind, rule.Kind.String(), serverapi.KeyID, f.ID, serverapi.KeyMethod, f.Method)
		switch rule.Kind {
		case FaultUnavailable:
			s.counters.unavailable.Add(1)
			s.free(j)
			j.c.send(respond(f, proto.StatusUnavailable, rule.unavailableText()))
			return proto.Frame{}, false, false
		case FaultSleep:
			if !s.pause(rule.Delay) {
				s.free(j)
				j.c.send(respond(f, proto.StatusUnavailable, "server closing"))
				return proto.Frame{}, false, false
			}
		}
	}
	status, payload := s.h.Execute(req, (*scratch)[:0])
	*scratch, lent = answerMemory(payload, *scratch, req.Payload)
	if status == proto.StatusUnknown {
		// The handler cannot say whether it executed: no answer is
		// the true one.
		return proto.Frame{}, false, false
	}
	rf = proto.Frame{Type: proto.TypeResponse, ID: f.ID, Status: status, Method: f.Method, Payload: payload}
	if !faulty {
		return rf, lent, true
	}
	out := encodeResponse(&rf)
	s.free(j)
	switch rule.Kind {
	case FaultLate:
		j.c.sendAt(out, req.Expiry.Add(rule.Delay))
	case FaultNoReply:
	case FaultClose:
		j.c.sendThenClose(nil)
	case FaultPartial:
		j.c.sendThenClose(out[:len(out)/2])
	case FaultBadMagic:
		out[4], out[5] = 0xde, 0xad
		j.c.sendThenClose(out)
	case FaultUnavailableAfterExec:
		s.counters.unavailable.Add(1)
		j.c.send(respond(f, proto.StatusUnavailable, "injected unavailable after executing"))
	default:
		j.c.send(out)
	}
	return proto.Frame{}, false, false
}

// answerMemory says whose memory a handler's answer payload is, given
// the scratch buffer the transport lent it as dst and the request's
// payload, and returns the scratch buffer for the next request. A
// payload that starts where scratch does is scratch grown in place: the
// caller copies it out before the next request and keeps it as scratch;
// one elsewhere inside scratch is copied out too, scratch kept as it
// was. Any other payload is lent: the request's memory, memory of the
// handler's own, or scratch moved by append, which the transport cannot
// tell apart, so it only reads it; scratch stays, made large enough for
// such an answer next time unless the answer was in the request's own
// memory.
func answerMemory(payload, scratch, reqPayload []byte) (next []byte, lent bool) {
	switch {
	case sameStart(payload, scratch):
		return payload, false
	case overlaps(payload, scratch):
		return scratch, false
	case overlaps(payload, reqPayload) || len(payload) <= cap(scratch):
		return scratch, true
	}
	return make([]byte, 0, len(payload)), true
}

// sameStart reports whether a and b begin at the same byte of memory.
func sameStart(a, b []byte) bool {
	return cap(a) > 0 && cap(b) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// pause sleeps d and reports whether it did; it returns false early if
// the server is closing, and the caller must then not execute.
func (s *Server) pause(d time.Duration) bool { return transport.Sleep(d, s.done, nil) }
