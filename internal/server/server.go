// Package server is the RPC transport: it accepts connections, reads and
// writes frames, queues business requests for a bounded pool of workers,
// enforces the server's limits and injects transport faults, and hands each
// business request to a transport.Handler whose payloads it never interprets.
package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rpcbench/rpcbench/internal/fault"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/transport"
)

// Server serves a transport.Handler over the wire protocol, injecting faults on
// request.
type Server struct {
	cfg     Config
	h       transport.Handler
	methods []string // the handler's business methods
	// reqs counts the requests received, by index in methods, on
	// connections whose readers have ended; a running reader counts in
	// its conn's own reqs (see Counters).
	reqs   []atomic.Int64
	log    *slog.Logger
	faults fault.Table[Fault]
	queue  *workQueue
	// payloads recycles large request payloads' memory.
	payloads *payloadPool
	done     chan struct{}  // closed by Close
	wg       sync.WaitGroup // workers, connection goroutines, Serve

	connSeq atomic.Uint64 // numbers connections, from 1, for the log

	mu    sync.Mutex // guards conns, counting, ln, closed, drain
	conns map[*conn]struct{}
	// counting holds the connections whose readers still run, and so
	// may still count requests: a connection leaves conns when it
	// closes, but counting only once its reader has folded its counts
	// into reqs, so that Counters never misses a request.
	counting map[*conn]struct{}
	ln       net.Listener
	closed   bool
	// drain is closed when the server's drain has ended, the server
	// closed; nil until a drain starts. Once set, Serve accepts no more.
	drain chan struct{}
	// accepting counts Serve's accept loops, so that a drain ends only
	// after they have stopped.
	accepting sync.WaitGroup
	// connsChanged (capacity 1) tells a drain that a connection closed.
	connsChanged chan struct{}

	counters counters
}

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

type counters struct {
	requestsCtl, requestsOther                   atomic.Int64
	expired, unavailable, queueFull              atomic.Int64
	connQueueFull                                atomic.Int64
	protocolErrors, connsAccepted, connsRejected atomic.Int64
	outLimitWaits, writeTimeouts                 atomic.Int64
	framesSent, writeChunks, faultsFired         atomic.Int64
	canceled, drainDropped                       atomic.Int64
}

// New validates cfg and starts the worker pool, which serves h. A rule in
// cfg.Faults naming a method h does not serve is refused with a
// *MethodError.
func New(cfg Config, h transport.Handler) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	methods := append([]string(nil), h.Methods()...)
	for _, f := range cfg.Faults {
		if err := f.CheckMethod(methods); err != nil {
			return nil, err
		}
	}
	lg := cfg.Log
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:     cfg,
		h:       h,
		methods: methods,
		reqs:    make([]atomic.Int64, len(methods)),
		log:     lg,
		queue:   newWorkQueue(cfg.Workers, cfg.QueueSize),

		payloads: newPayloadPool(),
		done:     make(chan struct{}),
		conns:    make(map[*conn]struct{}),
		counting: make(map[*conn]struct{}),

		connsChanged: make(chan struct{}, 1),
	}
	for _, f := range cfg.Faults {
		s.faults.Add(f, f.Method, f.Count)
	}
	s.wg.Add(cfg.Workers)
	for range cfg.Workers {
		go s.worker()
	}
	return s, nil
}

// AddFault activates a fault rule. A rule naming a method the handler
// does not serve is refused with a *MethodError.
func (s *Server) AddFault(f Fault) error {
	if err := f.CheckMethod(s.methods); err != nil {
		return err
	}
	s.faults.Add(f, f.Method, f.Count)
	s.log.Info(serverapi.EventFaultSet, serverapi.KeyFault, f.String())
	return nil
}

// ErrClosed is returned by Serve after Close or a drain.
var ErrClosed = errors.New("server: closed")

// Serve accepts connections on ln until Close or a drain. It always
// returns a non-nil error; after Close it is ErrClosed, and after a drain
// it is ErrClosed once the drain has ended and the server is closed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed || s.drain != nil {
		s.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	s.ln = ln
	s.wg.Add(1)
	s.accepting.Add(1)
	s.mu.Unlock()
	err := s.accept(ln)
	s.accepting.Done()
	s.wg.Done()
	s.mu.Lock()
	drain := s.drain
	s.mu.Unlock()
	if drain != nil && errors.Is(err, ErrClosed) {
		<-drain
	}
	return err
}

// accept is Serve's loop; it returns ErrClosed once Close or a drain
// closed the listener.
func (s *Server) accept(ln net.Listener) error {
	var pause time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.stopped() {
				return ErrClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Running out of file descriptors, or a connection reset
			// before it was accepted, is no reason to stop serving: back
			// off and accept again, as net/http does.
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			s.log.Warn(serverapi.EventAcceptError, serverapi.KeyErr, err.Error(), serverapi.KeyRetryIn, pause.String())
			if !s.pause(pause) {
				return ErrClosed
			}
			continue
		}
		pause = 0
		if !s.open(nc) {
			return ErrClosed
		}
	}
}

// stopped reports whether Close or a drain has closed the listener.
func (s *Server) stopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed || s.drain != nil
}

// open starts serving nc; it reports false when the server is closing.
// A connection accepted after a drain started, before the listener
// closed, is drained at once.
func (s *Server) open(nc net.Conn) bool {
	s.counters.connsAccepted.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		nc.Close()
		return false
	}
	if open := len(s.conns); open >= s.cfg.MaxConns {
		s.counters.connsRejected.Add(1)
		s.log.Warn(serverapi.EventConnRejected, serverapi.KeyRemote, nc.RemoteAddr().String(), serverapi.KeyOpen, open)
		nc.Close()
		return true
	}
	c := newConn(s, nc)
	s.log.Info(serverapi.EventConnOpen, serverapi.KeyConn, c.id, serverapi.KeyRemote, nc.RemoteAddr().String())
	if err := setUserTimeout(nc, s.cfg.WriteTimeout); err != nil {
		s.log.Warn(serverapi.EventSockoptError, serverapi.KeyConn, c.id, serverapi.KeyErr, err.Error())
	}
	s.conns[c] = struct{}{}
	s.counting[c] = struct{}{}
	s.wg.Add(2)
	if s.drain != nil {
		c.drain()
	}
	go c.readLoop()
	go c.writeLoop()
	return true
}

// Close stops accepting, closes every connection, stops the workers and
// waits for all of the server's goroutines to exit.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	s.queue.close()
	if s.ln != nil {
		s.ln.Close()
	}
	conns := s.connsLocked()
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	s.wg.Wait()
	return nil
}

func (s *Server) openConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// retire folds the request counts of c, whose reader has ended, into
// the server's.
func (s *Server) retire(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.reqs {
		s.reqs[i].Add(c.reqs[i].Load())
	}
	delete(s.counting, c)
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	select {
	case s.connsChanged <- struct{}{}:
	default:
	}
}

// Counters returns the transport's counters and the handler's by name, as
// ctl.stats reports them (see SPEC.md). Requests are counted per business
// method as requests.<method>.
func (s *Server) Counters() serverapi.Fields {
	c := &s.counters
	fs := serverapi.Fields{}
	add := func(name string, v int64) { fs[name] = strconv.FormatInt(v, 10) }
	s.mu.Lock()
	for i, m := range s.methods {
		n := s.reqs[i].Load()
		for c := range s.counting {
			n += c.reqs[i].Load()
		}
		add("requests."+m, n)
	}
	s.mu.Unlock()
	add("requests.ctl", c.requestsCtl.Load())
	add("requests.other", c.requestsOther.Load())
	add("expired", c.expired.Load())
	add("unavailable", c.unavailable.Load())
	add("queue_full", c.queueFull.Load())
	add("conn_queue_full", c.connQueueFull.Load())
	add("protocol_errors", c.protocolErrors.Load())
	add("conns_accepted", c.connsAccepted.Load())
	add("conns_rejected", c.connsRejected.Load())
	add("conns_open", int64(s.openConns()))
	add("out_limit_waits", c.outLimitWaits.Load())
	add("write_timeouts", c.writeTimeouts.Load())
	add("goroutines", int64(runtime.NumGoroutine()))
	add("frames_sent", c.framesSent.Load())
	add("write_chunks", c.writeChunks.Load())
	add("faults_fired", c.faultsFired.Load())
	add("canceled", c.canceled.Load())
	add("drain_dropped", c.drainDropped.Load())
	s.h.Counters(add)
	return fs
}

// method returns the index of a method among the handler's business
// methods, or -1.
func (s *Server) method(name string) int {
	for i, m := range s.methods {
		if m == name {
			return i
		}
	}
	return -1
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

func (s *Server) control(c *conn, f *proto.Frame) []byte {
	if s.cfg.Control != nil {
		if st, text, ok := s.cfg.Control(f.Method, f.Payload); ok {
			return respond(f, st, text)
		}
	}
	switch f.Method {
	case serverapi.MethodHello:
		role, ok := strings.CutPrefix(string(f.Payload), "role=")
		if !ok || role == "" || strings.ContainsAny(role, " \t\n") {
			return respond(f, proto.StatusInvalidArgument, `want payload "role=NAME"`)
		}
		s.log.Info(serverapi.EventConnRole, serverapi.KeyConn, c.id, serverapi.KeyRole, role)
		return respond(f, proto.StatusOK, "")
	case serverapi.MethodStats:
		return respond(f, proto.StatusOK, s.Counters().String())
	case serverapi.MethodFault:
		ft, err := ParseFault(string(f.Payload))
		if err == nil {
			err = s.AddFault(ft)
		}
		if err != nil {
			return respond(f, proto.StatusInvalidArgument, err.Error())
		}
		return respond(f, proto.StatusOK, ft.String())
	case serverapi.MethodClear:
		s.faults.Clear()
		s.log.Info(serverapi.EventFaultClear)
		return respond(f, proto.StatusOK, "")
	case serverapi.MethodCancel:
		id, err := cancelID(f.Payload)
		if err != nil {
			return respond(f, proto.StatusInvalidArgument, err.Error())
		}
		return respond(f, proto.StatusOK, "found="+strconv.FormatBool(s.queue.cancel(c, id)))
	case serverapi.MethodDrain:
		// Started once the answer is queued (see dispatch), so that the
		// answer goes out before this connection's drain frame.
		return respond(f, proto.StatusOK, "")
	}
	return respond(f, proto.StatusOK, "")
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

// cancelID decodes ctl.cancel's payload, "id=N" with N a request ID.
func cancelID(payload []byte) (uint64, error) {
	fs, err := serverapi.ParseFields(payload)
	if err != nil {
		return 0, err
	}
	v, ok := fs["id"]
	if !ok || len(fs) != 1 {
		return 0, fmt.Errorf("server: ctl.cancel payload %q, want \"id=N\"", payload)
	}
	id, err := strconv.ParseUint(v, 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("server: ctl.cancel id=%q is not a request ID", v)
	}
	return id, nil
}

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

// overlaps reports whether the memory of a and b, to their capacities,
// has a byte in common.
func overlaps(a, b []byte) bool {
	if cap(a) == 0 || cap(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return a0 < b0+uintptr(cap(b)) && b0 < a0+uintptr(cap(a))
}

// pause sleeps d and reports whether it did; it returns false early if
// the server is closing, and the caller must then not execute.
func (s *Server) pause(d time.Duration) bool { return transport.Sleep(d, s.done, nil) }

// respond encodes a response to f whose payload is text.
func respond(f *proto.Frame, st proto.Status, text string) []byte {
	return encodeResponse(&proto.Frame{Type: proto.TypeResponse, ID: f.ID, Status: st, Method: f.Method, Payload: []byte(text)})
}

// encodeResponse encodes r into a new slice.
func encodeResponse(r *proto.Frame) []byte {
	// Method and ID come from a decoded request and the payload is cut
	// to size, so this cannot fail.
	b, _ := appendResponse(nil, r)
	return b
}

// appendResponse appends r to dst. A payload over the frame limit is
// replaced by an APP_ERROR saying so.
func appendResponse(dst []byte, r *proto.Frame) ([]byte, error) {
	out, err := proto.AppendFrame(dst, r)
	if err != nil && errors.Is(err, proto.ErrInvalidFrame) && len(r.Payload) > 0 {
		small := *r
		small.Payload, small.Status = []byte("response too large"), proto.StatusAppError
		return proto.AppendFrame(dst, &small)
	}
	return out, err
}

// connsLocked returns the open connections; the caller holds s.mu.
func (s *Server) connsLocked() []*conn {
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}
