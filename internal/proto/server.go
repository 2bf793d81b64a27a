package proto

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Method names the server knows. Control methods start with "ctl." and are
// answered by the connection's reader without queueing, so they work even
// while every worker is busy.
const (
	MethodGet   = "get"
	MethodDebit = "debit"

	MethodStats = "ctl.stats" // answers the counters as Fields
	MethodFault = "ctl.fault" // payload: a fault in ParseFault's form
	MethodClear = "ctl.clear" // removes every fault rule
	MethodPing  = "ctl.ping"  // answers OK, empty payload
)

// DefaultBalance is every account's balance before its first debit.
const DefaultBalance = 1000

// ErrKeyReused is the text of the INVALID_ARGUMENT answer to a request
// that reuses an idempotency key with a different method or payload.
const ErrKeyReused = "idempotency key reused with different request"

// ServerConfig tunes a Server. Start from DefaultServerConfig.
type ServerConfig struct {
	// Workers is how many business requests may execute at once: the
	// number of worker goroutines, which take requests from the queue. A
	// connection's reader executes a request itself, without queueing it,
	// when a slot is free, nothing is queued, and the request can neither
	// sleep nor wait (no sleep field, no idempotency key, no fault rules).
	// Must be at least 1. Default 4.
	Workers int
	// QueueSize bounds business requests waiting for a worker; a request
	// that finds the queue full is answered UNAVAILABLE unexecuted. Must be
	// at least 1. Default 1024.
	QueueSize int
	// Chunk turns on chunk mode: responses written within ChunkWindow of
	// each other are coalesced and written in random 1-13 byte pieces, one
	// write call each.
	Chunk bool
	// ChunkWindow is how long the writer gathers responses in chunk mode.
	// Must be positive when Chunk is set. Default 2ms.
	ChunkWindow time.Duration
	// MaxConns bounds the connections open at once; one accepted beyond it
	// is closed at once (counted as conns_rejected). Must be at least 1.
	// Default 1024.
	MaxConns int
	// MaxOutBytes bounds, per connection, the bytes of answers waiting to
	// be written. While a connection is at the limit its reader stops
	// reading, so a client that sends without reading is held back by TCP
	// instead of growing the server's memory. Must be at least
	// MaxFrameLen+4, so that one answer always fits. Default 1 MiB.
	MaxOutBytes int
	// WriteTimeout bounds one write to a connection; a peer that reads
	// nothing for that long is disconnected (counted as write_timeouts).
	// Must be positive. Default 10s.
	WriteTimeout time.Duration
	// Faults are rules active from the start.
	Faults []Fault
	// Log receives one line per event (connections, protocol errors,
	// expired requests, faults fired). Nil discards.
	Log *log.Logger
}

// DefaultServerConfig returns the documented defaults.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		Workers:      4,
		QueueSize:    1024,
		ChunkWindow:  2 * time.Millisecond,
		MaxConns:     1024,
		MaxOutBytes:  1 << 20,
		WriteTimeout: 10 * time.Second,
	}
}

// Validate reports the first field that is out of range.
func (c *ServerConfig) Validate() error {
	switch {
	case c.Workers < 1:
		return fmt.Errorf("%w: Workers %d must be at least 1", ErrConfig, c.Workers)
	case c.QueueSize < 1:
		return fmt.Errorf("%w: QueueSize %d must be at least 1", ErrConfig, c.QueueSize)
	case c.Chunk && c.ChunkWindow <= 0:
		return fmt.Errorf("%w: ChunkWindow %v must be positive in chunk mode", ErrConfig, c.ChunkWindow)
	case c.MaxConns < 1:
		return fmt.Errorf("%w: MaxConns %d must be at least 1", ErrConfig, c.MaxConns)
	case c.MaxOutBytes < MaxFrameLen+lenPrefix:
		return fmt.Errorf("%w: MaxOutBytes %d must be at least %d", ErrConfig, c.MaxOutBytes, MaxFrameLen+lenPrefix)
	case c.WriteTimeout <= 0:
		return fmt.Errorf("%w: WriteTimeout %v must be positive", ErrConfig, c.WriteTimeout)
	}
	return nil
}

// Server serves get and debit over the wire protocol, injecting faults on
// request. State is in memory only.
type Server struct {
	cfg    ServerConfig
	log    *log.Logger
	faults faultTable
	queue  *workQueue
	done   chan struct{}
	wg     sync.WaitGroup // workers, connection goroutines, Serve

	mu       sync.Mutex // guards accounts, dedup, conns, ln, closed
	accounts map[string]*account
	dedup    map[string]*dedupEntry
	conns    map[*serverConn]struct{}
	ln       net.Listener
	closed   bool

	counters serverCounters
}

type account struct {
	balance int64
	debits  int64 // debit executions on this account
}

// dedupEntry is the stored outcome of the first request with a key.
type dedupEntry struct {
	fingerprint [sha256.Size]byte
	done        chan struct{} // closed once res is set
	res         execResult
}

// execResult is the outcome of executing a request, kept in the dedup
// table for replays.
type execResult struct {
	status Status
	msg    string // the payload when status is not OK
	// The fields of an OK answer. account aliases the request's payload,
	// which the request owns for good.
	account         []byte
	balance, debits int64
	budget          uint32
	replayed        bool
}

// appendPayload appends the answer's payload: for OK,
// "account=A balance=N budget=N exec=N replayed=B" (keys sorted, as
// Fields.String writes them); otherwise the message.
func (r *execResult) appendPayload(dst []byte) []byte {
	if r.status != StatusOK {
		return append(dst, r.msg...)
	}
	dst = append(dst, "account="...)
	dst = append(dst, r.account...)
	dst = append(dst, " balance="...)
	dst = strconv.AppendInt(dst, r.balance, 10)
	dst = append(dst, " budget="...)
	dst = strconv.AppendUint(dst, uint64(r.budget), 10)
	dst = append(dst, " exec="...)
	dst = strconv.AppendInt(dst, r.debits, 10)
	dst = append(dst, " replayed="...)
	dst = strconv.AppendBool(dst, r.replayed)
	return dst
}

type job struct {
	c       *serverConn
	f       Frame
	arrival time.Time
	// byReader is set when the connection's reader runs the job itself;
	// it then flushes the answer after the batch it read.
	byReader bool
}

type serverCounters struct {
	requestsGet, requestsDebit, requestsCtl, requestsOther atomic.Int64
	execGet, execDebit                                     atomic.Int64
	expired, unavailable, queueFull                        atomic.Int64
	dedupHits, keyConflicts                                atomic.Int64
	protocolErrors, connsAccepted, connsRejected           atomic.Int64
	outLimitWaits, writeTimeouts                           atomic.Int64
	framesSent, writeChunks, faultsFired                   atomic.Int64
}

// NewServer validates cfg and starts the worker pool.
func NewServer(cfg ServerConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lg := cfg.Log
	if lg == nil {
		lg = log.New(io.Discard, "", 0)
	}
	s := &Server{
		cfg:      cfg,
		log:      lg,
		queue:    newWorkQueue(cfg.Workers, cfg.QueueSize),
		done:     make(chan struct{}),
		accounts: make(map[string]*account),
		dedup:    make(map[string]*dedupEntry),
		conns:    make(map[*serverConn]struct{}),
	}
	for _, f := range cfg.Faults {
		s.faults.add(f)
	}
	s.wg.Add(cfg.Workers)
	for range cfg.Workers {
		go s.worker()
	}
	return s, nil
}

// AddFault activates a fault rule.
func (s *Server) AddFault(f Fault) {
	s.faults.add(f)
	s.log.Printf("FAULT_SET %v", f)
}

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("proto: server closed")

// Serve accepts connections on ln until Close. It always returns a non-nil
// error; after Close it is ErrServerClosed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.ln = ln
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	var pause time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return ErrServerClosed
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Running out of file descriptors, or a connection reset
			// before it was accepted, is no reason to stop serving: back
			// off and accept again, as net/http does.
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			s.log.Printf("ACCEPT_ERROR err=%q retry_in=%v", err, pause)
			if !s.pause(pause) {
				return ErrServerClosed
			}
			continue
		}
		pause = 0
		s.counters.connsAccepted.Add(1)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return ErrServerClosed
		}
		if open := len(s.conns); open >= s.cfg.MaxConns {
			s.mu.Unlock()
			s.counters.connsRejected.Add(1)
			s.log.Printf("CONN_REJECTED remote=%v open=%d", nc.RemoteAddr(), open)
			nc.Close()
			continue
		}
		s.log.Printf("CONN_OPEN remote=%v", nc.RemoteAddr())
		c := newServerConn(s, nc)
		s.conns[c] = struct{}{}
		s.wg.Add(2)
		s.mu.Unlock()
		go c.readLoop()
		go c.writeLoop()
	}
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
	conns := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
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

func (s *Server) forget(c *serverConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Counters returns the server's counters by name (see SPEC.md).
func (s *Server) Counters() Fields {
	c := &s.counters
	n := func(v *atomic.Int64) string { return strconv.FormatInt(v.Load(), 10) }
	return Fields{
		"requests.get":    n(&c.requestsGet),
		"requests.debit":  n(&c.requestsDebit),
		"requests.ctl":    n(&c.requestsCtl),
		"requests.other":  n(&c.requestsOther),
		"exec.get":        n(&c.execGet),
		"exec.debit":      n(&c.execDebit),
		"expired":         n(&c.expired),
		"unavailable":     n(&c.unavailable),
		"queue_full":      n(&c.queueFull),
		"dedup_hits":      n(&c.dedupHits),
		"key_conflicts":   n(&c.keyConflicts),
		"protocol_errors": n(&c.protocolErrors),
		"conns_accepted":  n(&c.connsAccepted),
		"conns_rejected":  n(&c.connsRejected),
		"conns_open":      strconv.Itoa(s.openConns()),
		"out_limit_waits": n(&c.outLimitWaits),
		"write_timeouts":  n(&c.writeTimeouts),
		"goroutines":      strconv.Itoa(runtime.NumGoroutine()),
		"frames_sent":     n(&c.framesSent),
		"write_chunks":    n(&c.writeChunks),
		"faults_fired":    n(&c.faultsFired),
	}
}

// dispatch handles one decoded request on the reader goroutine: control
// methods inline, business methods queued.
func (s *Server) dispatch(c *serverConn, f Frame, arrival time.Time) {
	switch f.Method {
	case MethodGet:
		s.counters.requestsGet.Add(1)
	case MethodDebit:
		s.counters.requestsDebit.Add(1)
	case MethodStats, MethodFault, MethodClear, MethodPing:
		s.counters.requestsCtl.Add(1)
		c.send(s.control(&f))
		return
	default:
		s.counters.requestsOther.Add(1)
		c.send(respond(&f, StatusInvalidArgument, "unknown method "+strconv.Quote(f.Method)))
		return
	}
	j := job{c: c, f: f, arrival: arrival}
	if s.inline(&j.f) && s.queue.claim() {
		j.byReader = true
		c.scratch = s.serve(j, c.scratch[:0])
		s.queue.release()
		return
	}
	if !s.queue.push(j) {
		s.counters.queueFull.Add(1)
		s.counters.unavailable.Add(1)
		s.log.Printf("QUEUE_FULL id=%d method=%s", f.ID, f.Method)
		c.send(respond(&f, StatusUnavailable, "queue full"))
	}
}

// inline reports whether f may run on the connection's reader: it cannot
// sleep or wait, so the reader is back to reading at once.
func (s *Server) inline(f *Frame) bool {
	return f.Key == "" && s.faults.empty() && !bytes.Contains(f.Payload, []byte("sleep="))
}

func (s *Server) control(f *Frame) []byte {
	switch f.Method {
	case MethodStats:
		return respond(f, StatusOK, s.Counters().String())
	case MethodFault:
		ft, err := ParseFault(string(f.Payload))
		if err != nil {
			return respond(f, StatusInvalidArgument, err.Error())
		}
		s.AddFault(ft)
		return respond(f, StatusOK, ft.String())
	case MethodClear:
		s.faults.clear()
		s.log.Printf("FAULT_CLEAR")
		return respond(f, StatusOK, "")
	}
	return respond(f, StatusOK, "")
}

func (s *Server) worker() {
	defer s.wg.Done()
	var scratch []byte // payload buffer, reused across requests
	for {
		j, ok := s.queue.pop()
		if !ok {
			return
		}
		scratch = s.serve(j, scratch[:0])
		s.queue.release()
	}
}

// serve runs one business request on a worker. scratch is a buffer the
// worker lends for the answer's payload; serve returns it, maybe grown.
func (s *Server) serve(j job, scratch []byte) []byte {
	f := &j.f
	budget := time.Duration(f.BudgetMs) * time.Millisecond
	// A request its reader runs has waited only for the requests before
	// it in the same read, which cannot sleep; reading the clock for each
	// would cost more than the request itself.
	var waited time.Duration
	if !j.byReader {
		waited = time.Since(j.arrival)
	}
	if waited >= budget {
		s.counters.expired.Add(1)
		s.log.Printf("EXPIRED id=%d method=%s budget=%d waited=%d", f.ID, f.Method, f.BudgetMs, waited.Milliseconds())
		j.c.send(respond(f, StatusDeadlineExceeded, fmt.Sprintf("expired before execution waited=%d", waited.Milliseconds())))
		return scratch
	}
	fault, faulty := s.faults.take(f.Method)
	if faulty {
		s.counters.faultsFired.Add(1)
		s.log.Printf("FAULT %v id=%d method=%s", fault.Kind, f.ID, f.Method)
		switch fault.Kind {
		case FaultUnavailable:
			s.counters.unavailable.Add(1)
			j.c.send(respond(f, StatusUnavailable, "injected unavailable"))
			return scratch
		case FaultSleep:
			if !s.pause(fault.Delay) {
				j.c.send(respond(f, StatusUnavailable, "server closing"))
				return scratch
			}
		}
	}
	res := s.execute(f, j.arrival.Add(budget))
	scratch = res.appendPayload(scratch)
	rf := Frame{Type: TypeResponse, ID: f.ID, Status: res.status, Method: f.Method, Payload: scratch}
	if !faulty {
		if j.byReader && j.c.rng == nil {
			j.c.unsignal = j.c.queueFrame(&rf) || j.c.unsignal
		} else {
			j.c.sendFrame(&rf)
		}
		return scratch
	}
	out := encodeResponse(&rf)
	switch fault.Kind {
	case FaultLate:
		at := j.arrival.Add(budget + fault.Delay)
		j.c.sendAt(out, at)
	case FaultNoReply:
	case FaultClose:
		j.c.sendThenClose(nil)
	case FaultPartial:
		j.c.sendThenClose(out[:len(out)/2])
	case FaultBadMagic:
		out[4], out[5] = 0xde, 0xad
		j.c.sendThenClose(out)
	default:
		j.c.send(out)
	}
	return scratch
}

// pause sleeps d and reports whether it did; it returns false early if
// the server is closing, and the caller must then not execute.
func (s *Server) pause(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.done:
		return false
	}
}

// execute applies f, deduplicating by idempotency key. expiry is when the
// request's budget ends; a duplicate waits for its original at most until
// then.
func (s *Server) execute(f *Frame, expiry time.Time) execResult {
	if f.Key == "" {
		return s.apply(f)
	}
	fp := fingerprint(f)
	s.mu.Lock()
	e, seen := s.dedup[f.Key]
	if !seen {
		e = &dedupEntry{fingerprint: fp, done: make(chan struct{})}
		s.dedup[f.Key] = e
	}
	s.mu.Unlock()
	if !seen {
		e.res = s.apply(f)
		close(e.done)
		return e.res
	}
	if e.fingerprint != fp {
		s.counters.keyConflicts.Add(1)
		s.log.Printf("KEY_CONFLICT id=%d key=%s", f.ID, f.Key)
		return execResult{status: StatusInvalidArgument, msg: ErrKeyReused}
	}
	t := time.NewTimer(time.Until(expiry))
	defer t.Stop()
	select {
	case <-e.done:
	case <-t.C:
		s.log.Printf("DEDUP_WAIT_EXPIRED id=%d key=%s", f.ID, f.Key)
		return execResult{status: StatusDeadlineExceeded, msg: "original request with this key still executing"}
	case <-s.done:
		return execResult{status: StatusUnavailable, msg: "server closing"}
	}
	s.counters.dedupHits.Add(1)
	s.log.Printf("DEDUP_HIT id=%d key=%s", f.ID, f.Key)
	res := e.res
	res.replayed = res.status == StatusOK
	return res
}

func fingerprint(f *Frame) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(f.Method))
	h.Write([]byte{0})
	h.Write(f.Payload)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// apply executes a get or debit. Payload fields: account (required),
// amount (debit, > 0), sleep (ms to sleep before executing); others are
// ignored.
func (s *Server) apply(f *Frame) execResult {
	args, err := parseArgs(f.Payload)
	if err != nil {
		return execResult{status: StatusInvalidArgument, msg: err.Error()}
	}
	if len(args.account) == 0 {
		return execResult{status: StatusInvalidArgument, msg: "account is required"}
	}
	if f.Method == MethodDebit && args.amount <= 0 {
		return execResult{status: StatusInvalidArgument, msg: "amount must be a positive integer"}
	}
	if !s.pause(time.Duration(args.sleep) * time.Millisecond) {
		return execResult{status: StatusUnavailable, msg: "server closing"}
	}

	s.mu.Lock()
	a := s.accounts[string(args.account)]
	if a == nil {
		a = &account{balance: DefaultBalance}
		s.accounts[string(args.account)] = a
	}
	if f.Method == MethodDebit {
		if a.balance < args.amount {
			s.mu.Unlock()
			return execResult{status: StatusAppError, msg: "insufficient funds"}
		}
		a.balance -= args.amount
		a.debits++
		s.counters.execDebit.Add(1)
	} else {
		s.counters.execGet.Add(1)
	}
	res := execResult{status: StatusOK, account: args.account, balance: a.balance, debits: a.debits, budget: f.BudgetMs}
	s.mu.Unlock()
	return res
}

// args are the fields of a get or debit payload.
type args struct {
	account       []byte // aliases the payload
	amount, sleep int64
}

// parseArgs reads the key=value pairs of a business payload, separated by
// ASCII white space, without allocating. A later pair overrides an earlier one with
// the same key.
func parseArgs(p []byte) (args, error) {
	var a args
	for len(p) > 0 {
		var tok []byte
		if i := bytes.IndexAny(p, " \t\n\v\f\r"); i >= 0 {
			tok, p = p[:i], p[i+1:]
		} else {
			tok, p = p, nil
		}
		if len(tok) == 0 {
			continue
		}
		k, v, ok := bytes.Cut(tok, []byte("="))
		if !ok || len(k) == 0 {
			return a, fmt.Errorf("proto: %q is not key=value", tok)
		}
		switch string(k) {
		case "account":
			a.account = v
		case "amount", "sleep":
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				if string(k) == "amount" {
					return a, errors.New("amount must be a positive integer")
				}
				return a, fmt.Errorf("proto: field %s=%q is not an integer", k, v)
			}
			if string(k) == "amount" {
				a.amount = n
			} else {
				a.sleep = n
			}
		}
	}
	return a, nil
}

// respond encodes a response to f whose payload is text.
func respond(f *Frame, st Status, text string) []byte {
	return encodeResponse(&Frame{Type: TypeResponse, ID: f.ID, Status: st, Method: f.Method, Payload: []byte(text)})
}

// encodeResponse encodes r into a new slice.
func encodeResponse(r *Frame) []byte {
	// Method and ID come from a decoded request and the payload is cut
	// to size, so this cannot fail.
	b, _ := appendResponse(nil, r)
	return b
}

// appendResponse appends r to dst. A payload over the frame limit is
// replaced by an APP_ERROR saying so.
func appendResponse(dst []byte, r *Frame) ([]byte, error) {
	out, err := AppendFrame(dst, r)
	if err != nil && errors.Is(err, ErrInvalidFrame) && len(r.Payload) > 0 {
		small := *r
		small.Payload, small.Status = []byte("response too large"), StatusAppError
		return AppendFrame(dst, &small)
	}
	return out, err
}
