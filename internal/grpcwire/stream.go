package grpcwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/transport"
)

// Metadata keys the server reads.
const (
	// MetaKey is the idempotency key's metadata key.
	MetaKey = "idempotency-key"
	// MetaCall names the logical call across its attempts, for the log.
	MetaCall = "x-rpcbench-call"
)

// stream is one request: what its HEADERS said, its message as it
// arrives, and whether it has been answered.
type stream struct {
	c       *conn
	id      uint32
	reqID   uint64
	method  string // the handler's method
	arrival time.Time
	key     string
	attempt transport.Attempt
	// timeout is the grpc-timeout; hasTimeout is false without one.
	timeout    time.Duration
	hasTimeout bool

	// Touched by the reader only, until finish hands the stream to its
	// goroutine.
	prefix [prefixLen]byte
	nPre   int
	msg    []byte // allocated once the prefix said its length
	ended  bool   // END_STREAM seen, or the stream answered early
	// http, for a request that is not gRPC's, is its answer, sent by
	// finish (notGRPC).
	http []op

	// logCost bounds the bytes of the stream's ATTEMPT line, which a
	// reset of it is charged (resetAllowed). Set by newStream.
	logCost int

	reset    atomic.Bool // the client sent RST_STREAM
	answered atomic.Bool // the final frame of an answer is queued

	// done is the handler's Request.Done: closed by cancel, on the
	// client's RST_STREAM, a stream error, the connection's close or the
	// server's.
	done       chan struct{}
	cancelOnce sync.Once
	// refs counts what keeps the stream in conn.live: its goroutine, and
	// wire while the writer has not ended it. Guarded by conn.mu.
	refs int
	wire bool
	// wEnded is wire's copy for the writer, which alone touches it: a
	// WINDOW_UPDATE arriving after the stream ended is ignored.
	wEnded bool
}

// cancel closes done once.
func (st *stream) cancel() { st.cancelOnce.Do(func() { close(st.done) }) }

// unref drops one hold on the stream's slot; the caller holds c.mu.
func (st *stream) unref() {
	st.refs--
	if st.refs == 0 && st.c.live[st.id] == st {
		delete(st.c.live, st.id)
		if st.c.draining && len(st.c.live) == 0 {
			st.c.drainedLocked()
		}
	}
}

// wireDone is called by the writer once nothing more goes out on the
// stream.
func (st *stream) wireDone() {
	c := st.c
	c.mu.Lock()
	if st.wire {
		st.wire = false
		st.unref()
	}
	c.mu.Unlock()
}

// newStream validates a request's HEADERS, logs its ATTEMPT and returns
// its stream, or answers it at once and returns nil.
func (c *conn) newStream(f *http2.MetaHeadersFrame) *stream {
	s := c.s
	path := f.PseudoValue("path")
	st := &stream{c: c, id: f.StreamID, reqID: s.reqSeq.Add(1), arrival: time.Now(), done: make(chan struct{})}
	st.attempt = transport.Attempt{Wire: serverapi.WireGRPC, Stream: f.StreamID, Prev: "-", Timeout: "-"}
	var contentType, call string
	for _, hf := range f.RegularFields() {
		switch hf.Name {
		case "content-type":
			contentType = hf.Value
		case "grpc-timeout":
			st.attempt.Timeout = hf.Value
		case "grpc-previous-rpc-attempts":
			st.attempt.Prev = hf.Value
		case MetaKey:
			st.key = hf.Value
		case MetaCall:
			call = hf.Value
		}
	}
	if call == "" {
		call = st.key
	}
	// A name longer than MaxMetaLen is refused below, and not counted:
	// the attempt table would hold it, and each of its ATTEMPT lines.
	long := metaOver(MetaKey, st.key)
	if long == "" {
		long = metaOver(MetaCall, call)
	}
	if long != "" {
		call = logValue(call)
	}
	st.attempt.Call = call
	if long == "" {
		st.attempt.N = s.attempt(call)
	}
	method, known := methodByPath[path]
	st.method = method
	if !known {
		method = logValue(path)
	}
	st.attempt.Prev, st.attempt.Timeout = logValue(st.attempt.Prev), logValue(st.attempt.Timeout)
	var timeoutErr error
	if st.attempt.Timeout != "-" {
		st.timeout, timeoutErr = ParseTimeout(st.attempt.Timeout)
		st.hasTimeout = timeoutErr == nil
	}
	budget := int64(-1)
	if st.hasTimeout {
		budget = st.timeout.Milliseconds()
	}
	st.attempt.BudgetMs = budget
	s.log.Info(serverapi.EventAttempt, serverapi.KeyWire, serverapi.WireGRPC, serverapi.KeyConn, c.id, serverapi.KeyStream, st.id,
		serverapi.KeyID, st.reqID, serverapi.KeyMethod, method, serverapi.KeyCall, call, serverapi.KeyAttempt, st.attempt.N,
		serverapi.KeyPrev, st.attempt.Prev, serverapi.KeyGRPCTimeout, st.attempt.Timeout, serverapi.KeyBudget, budget)
	st.logCost = attemptBytes(c.id, st.id, st.reqID, method, call, st.attempt.N, st.attempt.Prev, st.attempt.Timeout, budget)
	c.noteAttempt(st.id, st.logCost)

	c.mu.Lock()
	full := uint32(len(c.live)) >= s.cfg.MaxConcurrentStreams
	c.mu.Unlock()
	var outLimit string
	if !full {
		outLimit = c.outLimit()
	}
	switch {
	case full:
		c.refuse(st.id, nil, limitStreams)
		return nil
	case outLimit != "":
		c.refuse(st.id, nil, outLimit)
		return nil
	case f.PseudoValue("method") != "POST":
		s.counters.requestsOther.Add(1)
		return st.notGRPC("405", "grpcwire: gRPC requests are POST\n", hpack.HeaderField{Name: "allow", Value: "POST"})
	case !grpcContentType(contentType):
		s.counters.requestsOther.Add(1)
		return st.notGRPC("415", "grpcwire: gRPC requests have content-type application/grpc\n")
	case timeoutErr != nil:
		s.counters.requestsOther.Add(1)
		c.streamError(st.id, http2.ErrCodeProtocol, timeoutErr.Error())
		return nil
	case long != "":
		s.counters.requestsOther.Add(1)
		st.trailersOnly(InvalidArgument, long, nil)
		return nil
	case !known:
		s.counters.requestsOther.Add(1)
		st.trailersOnly(Unimplemented, "unknown method "+path, nil)
		return nil
	}
	s.reqs[st.method].Add(1)
	c.mu.Lock()
	c.streams[st.id] = st
	c.live[st.id] = st
	st.refs, st.wire = 1, true
	c.mu.Unlock()
	return st
}

// notGRPC makes st a request that is not gRPC's, answered with an HTTP
// status and a text body once the client has ended it (END_STREAM or
// trailers), as a gRPC request is; its DATA is dropped meanwhile. So its
// stream is open, its send window kept, while the client sends, and it
// holds a slot until the body is written.
func (st *stream) notGRPC(status, body string, extra ...hpack.HeaderField) *stream {
	c := st.c
	fields := append([]hpack.HeaderField{{Name: ":status", Value: status}, {Name: "content-type", Value: "text/plain; charset=utf-8"}}, extra...)
	st.http = []op{{kind: opHeaders, stream: st.id, st: st, fields: fields}, {kind: opData, stream: st.id, st: st, end: true, data: []byte(body)}}
	c.mu.Lock()
	c.streams[st.id] = st
	c.live[st.id] = st
	st.refs, st.wire = 1, true
	c.mu.Unlock()
	return st
}

// MaxMetaLen bounds the idempotency-key and x-rpcbench-call values a
// request may carry, in bytes: rpcbench's wire bounds its keys to 64
// (proto.MaxKeyLen), and call names run to about 60. A longer one is
// answered INVALID_ARGUMENT, unexecuted.
const MaxMetaLen = 128

// metaOver returns why a metadata value is refused, or "".
func metaOver(name, v string) string {
	if len(v) <= MaxMetaLen {
		return ""
	}
	return fmt.Sprintf("%s of %d bytes, over %d", name, len(v), MaxMetaLen)
}

// logValue returns a value a client chose as an ATTEMPT line logs it: as
// it is up to MaxMetaLen bytes; longer, its first MaxMetaLen bytes and
// how long it was, so that what a request costs the log is bounded
// whatever its headers hold.
func logValue(v string) string {
	if len(v) <= MaxMetaLen {
		return v
	}
	return fmt.Sprintf("%s...(%d bytes)", v[:MaxMetaLen], len(v))
}

// grpcContentType reports whether v is application/grpc, maybe with a
// +subtype or parameters.
func grpcContentType(v string) bool {
	rest, ok := strings.CutPrefix(v, "application/grpc")
	return ok && (rest == "" || rest[0] == '+' || rest[0] == ';')
}

// add appends a DATA frame's bytes to the message, checking the length
// prefix against MaxMessageLen before the message is allocated. A
// message the server will not take is answered at once.
func (st *stream) add(b []byte) {
	if st.http != nil {
		return
	}
	if st.nPre < prefixLen {
		n := copy(st.prefix[st.nPre:], b)
		st.nPre += n
		b = b[n:]
		if st.nPre < prefixLen {
			return
		}
		n32 := binary.BigEndian.Uint32(st.prefix[1:])
		switch {
		case st.prefix[0] != 0:
			st.early(Internal, "compressed request message, but no grpc-encoding was negotiated")
			return
		case uint64(n32) > uint64(st.c.s.cfg.MaxMessageLen):
			st.early(ResourceExhausted, fmt.Sprintf("request message of %d bytes over the limit of %d", n32, st.c.s.cfg.MaxMessageLen))
			return
		}
		st.msg = make([]byte, 0, n32)
	}
	if len(b) > cap(st.msg)-len(st.msg) {
		st.early(Internal, "more than one request message on a unary call")
		return
	}
	st.msg = append(st.msg, b...)
}

// early answers a stream the reader refuses before the request ends,
// trailers-only, and forgets it.
func (st *stream) early(code Code, msg string) {
	c := st.c
	c.mu.Lock()
	delete(c.streams, st.id)
	c.mu.Unlock()
	st.ended = true
	st.trailersOnly(code, msg, nil)
}

// finish is called at END_STREAM: a complete request starts executing
// on a goroutine of its own, so that the reader keeps reading.
func (st *stream) finish() {
	if st.ended {
		return
	}
	st.ended = true
	if st.http != nil {
		st.forget()
		st.c.queue(st.http...)
		return
	}
	if st.nPre < prefixLen || len(st.msg) < cap(st.msg) {
		st.early(Internal, "request ended before its message did")
		return
	}
	c, s := st.c, st.c.s
	c.mu.Lock()
	closing := c.closing || c.silent
	if !closing {
		st.refs++ // the goroutine's
	}
	c.mu.Unlock()
	if closing {
		// A close is queued, or the connection is silent: nothing could
		// answer the request.
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			c.mu.Lock()
			st.unref()
			c.mu.Unlock()
		}()
		st.run()
	}()
}

// statusCode maps the handler's status to the gRPC code the server
// answers it with.
func statusCode(st proto.Status) Code {
	switch st {
	case proto.StatusOK:
		return OK
	case proto.StatusAppError:
		return FailedPrecondition
	case proto.StatusInvalidArgument:
		return InvalidArgument
	case proto.StatusDeadlineExceeded:
		return DeadlineExceeded
	case proto.StatusUnavailable:
		return Unavailable
	}
	return Unknown
}

// run serves a complete request: the budget rule, the fault that fires,
// the handler, the answer.
func (st *stream) run() {
	c, s := st.c, st.c.s
	r, err := decodeRequest(st.method, st.msg)
	var payload []byte
	if err == nil {
		payload, err = appendPayload(nil, st.method, &r)
	}
	// The payload is a copy: the message, which the stream would keep
	// until the writer is done with it, is not needed any more.
	st.msg = nil
	if err != nil {
		code := Internal
		if errors.Is(err, errArgument) {
			code = InvalidArgument
		}
		st.trailersOnly(code, err.Error(), nil)
		return
	}
	release, ok := st.awaitSlot()
	if !ok {
		return
	}
	defer release()
	if st.hasTimeout {
		if waited := time.Since(st.arrival); waited >= st.timeout {
			s.counters.expired.Add(1)
			s.log.Warn(serverapi.EventExpired, serverapi.KeyID, st.reqID, serverapi.KeyMethod, st.method,
				serverapi.KeyBudget, st.timeout.Milliseconds(), serverapi.KeyWaited, waited.Milliseconds(),
				serverapi.KeyWire, serverapi.WireGRPC, serverapi.KeyConn, c.id, serverapi.KeyStream, st.id, serverapi.KeyCall, st.attempt.Call)
			st.trailersOnly(DeadlineExceeded, fmt.Sprintf("expired before execution waited=%d", waited.Milliseconds()), nil)
			return
		}
	}
	// The HEADERS were taken below the out limits, but a burst of
	// requests all arrive before any of their answers is queued: each is
	// checked again as it is about to execute.
	if limit := c.outLimit(); limit != "" {
		st.forget()
		c.refuse(st.id, st, limit)
		return
	}
	fault, faulty := s.faults.Take(st.method, nil)
	if faulty {
		s.counters.faultsFired.Add(1)
		s.log.Info(serverapi.EventFault, serverapi.KeyKind, fault.Kind.String(), serverapi.KeyID, st.reqID, serverapi.KeyMethod, st.method,
			serverapi.KeyWire, serverapi.WireGRPC, serverapi.KeyConn, c.id, serverapi.KeyStream, st.id, serverapi.KeyCall, st.attempt.Call)
		if !fault.executes() {
			if fault.Kind == FaultUnavailable && !transport.Sleep(fault.Delay, st.done, nil) {
				return // reset meanwhile: nothing to refuse
			}
			st.unexecuted(fault)
			return
		}
		if fault.Kind == FaultSleep && !transport.Sleep(fault.Delay, st.done, nil) {
			st.trailersOnly(Unavailable, "server closing", nil)
			return
		}
	}
	budget := uint32(math.MaxUint32)
	expiry := st.arrival.Add(100 * 365 * 24 * time.Hour)
	if st.hasTimeout {
		budget = uint32(min(st.timeout.Milliseconds(), math.MaxUint32))
		expiry = st.arrival.Add(st.timeout)
	}
	req := transport.Request{
		ID: st.reqID, Conn: c.id, Method: st.method, Key: st.key, Payload: payload,
		BudgetMs: budget, Expiry: expiry, Done: st.done, Attempt: &st.attempt,
	}
	var stop func() bool
	if st.hasTimeout && s.h.MayBlock(&req) {
		req.Deadline, stop = deadlineAt(expiry)
	}
	status, answer := s.h.Execute(&req, nil)
	release() // what the fault does after executing holds no worker
	expired := stop != nil && stop()
	if req.SleepCut && st.cut(expired) {
		return
	}
	if status == proto.StatusUnknown {
		// The handler cannot say whether it executed: no answer is the
		// true one, and the stream stays open until the client ends it.
		return
	}
	code := statusCode(status)
	var msg string
	var reply []byte
	if code == OK {
		reply, err = appendReply(make([]byte, prefixLen, prefixLen+len(answer)+16), st.method, answer)
		if err != nil {
			code, msg = Internal, err.Error()
		}
		binary.BigEndian.PutUint32(reply[1:], uint32(len(reply)-prefixLen))
	} else {
		msg = string(answer)
	}
	if !faulty {
		if code != OK {
			st.trailersOnly(code, msg, nil)
			return
		}
		st.respond(reply)
		return
	}
	st.executed(fault, code, msg, reply)
}

// deadlineAt returns a channel closed when expiry passes, for a
// handler's Sleep, and a function, to call once the handler has
// returned, that stops the timer and reports whether it had fired.
func deadlineAt(expiry time.Time) (<-chan struct{}, func() bool) {
	ch := make(chan struct{})
	t := time.AfterFunc(time.Until(expiry), func() { close(ch) })
	return ch, func() bool { return !t.Stop() }
}

// cut answers, and logs, a request whose handler's Sleep was cut, so
// that it did not execute: by the client's reset (CANCELED, unanswered:
// the client wants nothing more) or by its deadline (EXPIRED,
// DEADLINE_EXCEEDED). It reports false when neither cut it (the server
// is closing), and the caller sends the handler's answer.
func (st *stream) cut(expired bool) bool {
	c, s := st.c, st.c.s
	waited := time.Since(st.arrival).Milliseconds()
	switch {
	case st.reset.Load():
		s.log.Info(serverapi.EventCanceled, serverapi.KeyConn, c.id, serverapi.KeyID, st.reqID, serverapi.KeyMethod, st.method,
			serverapi.KeyWaited, waited, serverapi.KeyWire, serverapi.WireGRPC, serverapi.KeyStream, st.id, serverapi.KeyCall, st.attempt.Call)
		return true
	case expired:
		s.counters.expired.Add(1)
		s.log.Warn(serverapi.EventExpired, serverapi.KeyID, st.reqID, serverapi.KeyMethod, st.method,
			serverapi.KeyBudget, st.timeout.Milliseconds(), serverapi.KeyWaited, waited,
			serverapi.KeyWire, serverapi.WireGRPC, serverapi.KeyConn, c.id, serverapi.KeyStream, st.id, serverapi.KeyCall, st.attempt.Call)
		st.trailersOnly(DeadlineExceeded, fmt.Sprintf("deadline passed while the handler waited waited=%d", waited), nil)
		return true
	}
	return false
}

// awaitSlot waits for a worker slot when Config.Workers bounds them.
// ok is true when the request goes on: holding a slot, or because its
// grpc-timeout passed while it waited, which the caller's expiry check
// then answers without one. ok is false when the stream was reset or the
// connection or server closed first: the request is not executed and
// nothing answers it. release gives the slot back, if one is held; it
// may be called more than once.
func (st *stream) awaitSlot() (release func(), ok bool) {
	s := st.c.s
	if s.slots == nil {
		return func() {}, true
	}
	held := true
	release = func() {
		if held {
			held = false
			<-s.slots
		}
	}
	select {
	case s.slots <- struct{}{}:
		return release, true
	default:
	}
	var expired <-chan time.Time
	if st.hasTimeout {
		t := time.NewTimer(time.Until(st.arrival.Add(st.timeout)))
		defer t.Stop()
		expired = t.C
	}
	select {
	case s.slots <- struct{}{}:
		return release, true
	case <-expired:
		held = false
		return release, true
	case <-st.done:
		if st.reset.Load() {
			s.log.Info(serverapi.EventCanceled, serverapi.KeyConn, st.c.id, serverapi.KeyID, st.reqID, serverapi.KeyMethod, st.method,
				serverapi.KeyWaited, time.Since(st.arrival).Milliseconds(),
				serverapi.KeyWire, serverapi.WireGRPC, serverapi.KeyStream, st.id, serverapi.KeyCall, st.attempt.Call)
		}
		return nil, false
	}
}

// unexecuted acts out a fault that fires instead of executing.
func (st *stream) unexecuted(f Fault) {
	c, s := st.c, st.c.s
	switch f.Kind {
	case FaultUnavailable:
		s.counters.unavailable.Add(1)
		var extra []hpack.HeaderField
		switch {
		case f.RetryAfter != 0:
			extra = []hpack.HeaderField{{Name: "grpc-retry-pushback-ms", Value: strconv.FormatInt(f.pushbackMs(), 10)}}
		case f.Pushback != "":
			extra = []hpack.HeaderField{{Name: "grpc-retry-pushback-ms", Value: f.Pushback}}
		}
		st.trailersOnly(Unavailable, "injected unavailable", extra)
	case FaultRST: // REFUSED_STREAM
		st.forget()
		c.queue(op{kind: opRST, stream: st.id, st: st, code: f.Code})
	case FaultGoAwayBelow:
		last := uint32(0)
		if st.id > 2 {
			last = st.id - 2
		}
		st.forget()
		c.closeWith(false, c.goAway(last, http2.ErrCodeNo, "injected goaway_below"))
	}
}

// executed acts out a fault after the handler executed the request; code,
// msg and reply are the answer it would have sent.
func (st *stream) executed(f Fault, code Code, msg string, reply []byte) {
	c, s := st.c, st.c.s
	answer := func() {
		if code != OK {
			st.trailersOnly(code, msg, nil)
			return
		}
		st.respond(reply)
	}
	switch f.Kind {
	case FaultUnavailableAfterExec:
		s.counters.unavailable.Add(1)
		st.trailersOnly(Unavailable, "injected unavailable after executing", nil)
	case FaultUnavailableAfterHeaders:
		s.counters.unavailable.Add(1)
		st.forget()
		c.queue(st.responseHeaders(), st.trailers(Unavailable, "injected unavailable after headers"))
	case FaultClose, FaultReset:
		st.forget()
		c.closeWith(f.Kind == FaultReset)
	case FaultCutData:
		st.forget()
		if len(reply) == 0 {
			reply = make([]byte, prefixLen)
		}
		// A DATA frame header announcing the reply's first frame, at most
		// the 16384 bytes every peer accepts (RFC 9113 §4.2), then half
		// of it: a longer announcement would be a frame too large, not a
		// cut one.
		n := min(len(reply), defaultMaxFrame)
		hdr := make([]byte, 9, 9+n/2)
		hdr[0], hdr[1], hdr[2] = byte(n>>16), byte(n>>8), byte(n)
		hdr[3] = byte(http2.FrameData)
		binary.BigEndian.PutUint32(hdr[5:], st.id)
		c.closeWith(false, st.responseHeaders(), op{kind: opRaw, stream: st.id, st: st, data: append(hdr, reply[:n/2]...)})
	case FaultRST:
		st.forget()
		ops := []op{{kind: opRST, stream: st.id, st: st, code: f.Code}}
		if f.Headers {
			ops = append([]op{st.responseHeaders()}, ops...)
		}
		c.queue(ops...)
	case FaultGoAwayCover:
		st.forget()
		c.closeWith(false, c.goAway(st.id, http2.ErrCodeNo, "injected goaway_cover"))
	case FaultLate:
		at := st.arrival.Add(f.Delay)
		if st.hasTimeout {
			at = at.Add(st.timeout)
		}
		t := time.NewTimer(time.Until(at))
		defer t.Stop()
		select {
		case <-t.C:
			answer()
		case <-st.done:
		}
	case FaultNoReply:
	case FaultSilent:
		c.silence()
	default: // FaultSleep: it slept before executing
		answer()
	}
}

// responseHeaders is the op sending a response's HEADERS.
func (st *stream) responseHeaders() op {
	return op{kind: opHeaders, stream: st.id, st: st, fields: []hpack.HeaderField{
		{Name: ":status", Value: "200"}, {Name: "content-type", Value: "application/grpc"},
	}}
}

// trailers is the op sending a response's trailers, ending the stream.
func (st *stream) trailers(code Code, msg string) op {
	fields := []hpack.HeaderField{{Name: "grpc-status", Value: strconv.Itoa(int(code))}}
	if msg != "" {
		fields = append(fields, hpack.HeaderField{Name: "grpc-message", Value: percentEncode(msg)})
	}
	return op{kind: opHeaders, stream: st.id, st: st, end: true, fields: fields}
}

// respond queues a normal answer: HEADERS, DATA holding reply (a
// length-prefixed message), trailers with grpc-status 0.
func (st *stream) respond(reply []byte) {
	st.forget()
	st.c.queue(st.responseHeaders(), op{kind: opData, stream: st.id, st: st, data: reply}, st.trailers(OK, ""))
}

// trailersOnly queues a trailers-only answer: one HEADERS frame with
// :status 200, content-type (without which grpc-go takes the answer for
// a non-gRPC one and reports UNKNOWN), grpc-status, grpc-message and
// extra, ending the stream.
func (st *stream) trailersOnly(code Code, msg string, extra []hpack.HeaderField) {
	st.forget()
	o := st.trailers(code, msg)
	o.fields = append(append(st.responseHeaders().fields, o.fields...), extra...)
	st.c.queue(o)
}

// forget marks the stream answered and takes it out of the streams the
// reader reads; it keeps its slot until the writer has ended it.
func (st *stream) forget() {
	st.answered.Store(true)
	c := st.c
	c.mu.Lock()
	if c.streams[st.id] == st {
		delete(c.streams, st.id)
	}
	c.mu.Unlock()
}
