package grpcwire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/rpcbench/rpcbench/internal/fault"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/transport"
)

// Service is the gRPC service the server serves.
const Service = "rpcbench.bank.v1.Bank"

// methodByPath maps a request's :path to the handler's method.
var methodByPath = map[string]string{
	"/" + Service + "/Get":   "get",
	"/" + Service + "/Debit": "debit",
	"/" + Service + "/Echo":  "echo",
}

// Config tunes a Server. Start from DefaultConfig; New validates it.
type Config struct {
	// MaxConcurrentStreams is SETTINGS_MAX_CONCURRENT_STREAMS: streams
	// open at once per connection; a HEADERS beyond it is refused with
	// RST_STREAM(REFUSED_STREAM), unexecuted. At least 1. Default 256.
	MaxConcurrentStreams uint32
	// MaxConns bounds the connections open at once: one accepted beyond
	// it is closed at once, before any goroutine starts for it. At least
	// 1. Default 1024.
	MaxConns int
	// MaxOutBytes bounds, per connection, the answer bytes queued and not
	// yet written: the DATA of OK answers (each message with its 5-byte
	// prefix), counted from the answer's queueing until the writer has
	// handed each frame to the socket, or dropped it. A request HEADERS
	// arriving while its connection holds MaxOutBytes or more, and a
	// complete request about to execute then, is refused with
	// RST_STREAM(REFUSED_STREAM), unexecuted. At least 1. Default 1 MiB.
	MaxOutBytes int64
	// MaxOutTotal is MaxOutBytes across all the server's connections. At
	// least 1. Default 64 MiB.
	MaxOutTotal int64
	// MaxMessageLen bounds a request message, in bytes, checked against
	// the length prefix before anything is allocated; a longer one is
	// answered RESOURCE_EXHAUSTED. At least 1. Default 16384.
	MaxMessageLen int
	// MaxHeaderListSize is SETTINGS_MAX_HEADER_LIST_SIZE, in bytes as
	// RFC 9113 counts them; a longer header list gets
	// RST_STREAM(PROTOCOL_ERROR). At least 1024. Default 16384.
	MaxHeaderListSize uint32
	// Drain is how long a connection closed with FIN keeps being read
	// after CloseWrite, so that the final Close finds no unread bytes
	// and sends no RST. Must be positive. Default 200ms.
	Drain time.Duration
	// WriteTimeout bounds one batch of the writer, from its first write
	// to its flush; a peer that reads nothing for that long is
	// disconnected (WRITE_TIMEOUT). Must be positive. Default 10s.
	WriteTimeout time.Duration
	// ReadTimeout bounds how long the client preface (counted from the
	// connection's acceptance), a frame (from its first byte) and a
	// header block (from its HEADERS' first byte to END_HEADERS) may take
	// to arrive; past it the connection is closed (READ_TIMEOUT). A
	// connection idle between frames has no deadline. Must be positive.
	// Default 10s.
	ReadTimeout time.Duration
	// KeepAlive is the TCP keepalive idle time, applied with
	// WriteTimeout by transport.TuneTCP to every connection accepted
	// (rpcserver passes -keepalive, as on its own wire): a healthy idle
	// peer is kept, a dead one dropped. 0 turns keepalive off. Must not
	// be negative. Default 15s.
	KeepAlive time.Duration
	// Workers bounds the requests executing at once, as rpcserver's
	// -workers does on its own wire: a request past it waits, in arrival
	// order, for a slot; its grpc-timeout runs meanwhile, and one whose
	// timeout passes or whose client resets it while waiting is not
	// executed. The slot is held from the fault's sleep (if any) to the
	// handler's return. Zero means no bound: every request executes at
	// once on its own goroutine. Default 0.
	Workers int
	// Faults are rules active from the start.
	Faults []Fault
	// Log receives the events SPEC.md lists, named by serverapi's Event
	// constants. Nil discards.
	Log *slog.Logger
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		MaxConcurrentStreams: 256,
		MaxConns:             1024,
		MaxOutBytes:          1 << 20,
		MaxOutTotal:          64 << 20,
		MaxMessageLen:        16384,
		MaxHeaderListSize:    16384,
		Drain:                200 * time.Millisecond,
		WriteTimeout:         10 * time.Second,
		ReadTimeout:          10 * time.Second,
		KeepAlive:            15 * time.Second,
	}
}

// ErrConfig is wrapped by every error Validate returns, a
// *transport.FieldError.
var ErrConfig = errors.New("grpcwire: invalid config")

// Validate reports the first field that is out of range.
func (c *Config) Validate() error {
	bad := func(field string, v any, rule string) error {
		return &transport.FieldError{Config: ErrConfig, Field: field, Value: v, Rule: rule}
	}
	switch {
	case c.MaxConcurrentStreams < 1:
		return bad("MaxConcurrentStreams", c.MaxConcurrentStreams, "must be at least 1")
	case c.MaxConns < 1:
		return bad("MaxConns", c.MaxConns, "must be at least 1")
	case c.MaxOutBytes < 1:
		return bad("MaxOutBytes", c.MaxOutBytes, "must be at least 1")
	case c.MaxOutTotal < 1:
		return bad("MaxOutTotal", c.MaxOutTotal, "must be at least 1")
	case c.MaxMessageLen < 1:
		return bad("MaxMessageLen", c.MaxMessageLen, "must be at least 1")
	case c.MaxHeaderListSize < 1024:
		return bad("MaxHeaderListSize", c.MaxHeaderListSize, "must be at least 1024")
	case c.Drain <= 0:
		return bad("Drain", c.Drain, "must be positive")
	case c.WriteTimeout <= 0:
		return bad("WriteTimeout", c.WriteTimeout, "must be positive")
	case c.ReadTimeout <= 0:
		return bad("ReadTimeout", c.ReadTimeout, "must be positive")
	case c.KeepAlive < 0:
		return bad("KeepAlive", c.KeepAlive, "must not be negative (0 turns keepalive off)")
	case c.Workers < 0:
		return bad("Workers", c.Workers, "must be 0 (no bound) or more")
	}
	return nil
}

// Server serves a transport.Handler as the Bank gRPC service, injecting
// faults on request.
type Server struct {
	cfg     Config
	h       transport.Handler
	methods []string
	log     *slog.Logger
	faults  *fault.Table[Fault]
	done    chan struct{}  // closed by Close
	wg      sync.WaitGroup // connection goroutines, streams, Serve
	// slots holds a token per executing request when Config.Workers
	// bounds them; nil when it does not. Blocked senders are served in
	// arrival order.
	slots chan struct{}

	connSeq, reqSeq atomic.Uint64 // number connections and requests, from 1
	// outTotal is the sum of the connections' outBytes: what
	// Config.MaxOutTotal bounds.
	outTotal atomic.Int64
	// limits logs the refusals of Config's limits (LIMIT events).
	limits *transport.LimitLog

	mu     sync.Mutex // guards conns, ln, closed, draining, drained
	conns  map[*conn]struct{}
	ln     net.Listener
	closed bool
	// draining is set by Drain; drained is closed once no connection
	// is left after it.
	draining bool
	drained  chan struct{}

	amu      sync.Mutex     // guards attempts, order
	attempts map[string]int // attempts seen per logical call
	order    []string       // attempts' calls, oldest first

	reqs     map[string]*atomic.Int64 // requests per handler method; the map is never written after New
	counters counters
}

type counters struct {
	requestsOther, expired, unavailable, protocolErrors atomic.Int64
	connsAccepted, framesSent, faultsFired, canceled    atomic.Int64
	writeTimeouts, connsRejected, streamsRefused        atomic.Int64
	readTimeouts, calmCloses, logSuppressed             atomic.Int64
}

// New validates cfg and returns a Server for h, which must serve get,
// debit and echo. A rule naming another method is refused with a
// *fault.MethodError.
func New(cfg Config, h transport.Handler) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	methods := append([]string(nil), h.Methods()...)
	s := &Server{
		cfg: cfg, h: h, methods: methods, log: cfg.Log,
		faults:   fault.NewTable[Fault](grammar.Pkg, methods),
		done:     make(chan struct{}),
		conns:    make(map[*conn]struct{}),
		attempts: make(map[string]int),
		reqs:     make(map[string]*atomic.Int64),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.limits = transport.NewLimitLog(s.log, transport.LimitLogInterval, serverapi.KeyWire, serverapi.WireGRPC)
	if cfg.Workers > 0 {
		s.slots = make(chan struct{}, cfg.Workers)
	}
	for _, m := range methodByPath {
		if !slices.Contains(methods, m) {
			return nil, fmt.Errorf("grpcwire: the handler does not serve %q", m)
		}
	}
	for _, m := range methods {
		s.reqs[m] = new(atomic.Int64)
	}
	for _, f := range cfg.Faults {
		if err := s.faults.Add(f); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// AddFault activates a rule. One naming a method the handler does not
// serve is refused with a *fault.MethodError.
func (s *Server) AddFault(f Fault) error { return s.faults.Set(f, s.log) }

// ClearFaults removes every rule and forgets every call's attempts
// (ctl.clear): the next scenario counts its attempts from 1.
func (s *Server) ClearFaults() {
	s.faults.Clear()
	s.amu.Lock()
	s.attempts, s.order = make(map[string]int), nil
	s.amu.Unlock()
}

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("grpcwire: closed")

// Serve accepts connections on ln until Close. Each must start with the
// HTTP/2 client preface. It always returns a non-nil error; after Close
// it is ErrClosed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	s.ln = ln
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	return transport.Acceptor{Log: s.log, Done: s.done, Stopped: s.stopped, Open: s.serveConn, Closed: ErrClosed}.Serve(ln)
}

// stopped reports whether Close has begun.
func (s *Server) stopped() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// serveConn is ServeConn for Serve's loop, which never stops for a
// connection.
func (s *Server) serveConn(nc net.Conn) bool {
	s.ServeConn(nc)
	return true
}

// Limits by their flag's name, in LIMIT events.
const (
	limitConns    = serverapi.FlagMaxConns
	limitStreams  = serverapi.FlagGRPCMaxStreams
	limitOutBytes = serverapi.FlagMaxOutBytes
	limitOutTotal = serverapi.FlagMaxOutTotal
)

// ServeConn serves one accepted connection, on goroutines of its own,
// and returns at once. After Close it closes nc; with MaxConns
// connections open, it closes nc at once (conns_rejected, LIMIT).
func (s *Server) ServeConn(nc net.Conn) {
	s.counters.connsAccepted.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.draining {
		// Accepted as the listener closed: nothing was processed on it.
		nc.Close()
		return
	}
	if len(s.conns) >= s.cfg.MaxConns {
		s.counters.connsRejected.Add(1)
		s.limits.Note(limitConns)
		nc.Close()
		return
	}
	c := newConn(s, nc)
	// The server's SETTINGS are its first frame, queued before anything
	// else can be (a drain's GOAWAY).
	c.queue(op{kind: opSettings, settings: []http2.Setting{
		{ID: http2.SettingMaxConcurrentStreams, Val: s.cfg.MaxConcurrentStreams},
		{ID: http2.SettingMaxHeaderListSize, Val: s.cfg.MaxHeaderListSize},
	}})
	s.conns[c] = struct{}{}
	s.log.Info(serverapi.EventConnOpen, serverapi.KeyConn, c.id, serverapi.KeyRemote, nc.RemoteAddr().String(), serverapi.KeyWire, serverapi.WireGRPC)
	if err := transport.TuneTCP(nc, s.cfg.KeepAlive, s.cfg.WriteTimeout); err != nil {
		s.log.Warn(serverapi.EventSockoptError, serverapi.KeyConn, c.id, serverapi.KeyErr, err.Error(), serverapi.KeyWire, serverapi.WireGRPC)
	}
	s.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
}

// Close stops accepting, closes every connection and waits for every
// goroutine of the server to exit.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	if s.ln != nil {
		s.ln.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	s.wg.Wait()
	s.limits.Close()
	return nil
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.draining && len(s.conns) == 0 {
		s.drainedLocked()
	}
	s.mu.Unlock()
}

// drainedLocked closes drained, once; the caller holds s.mu.
func (s *Server) drainedLocked() {
	select {
	case <-s.drained:
	default:
		close(s.drained)
	}
}

// Drain stops the server gracefully: it takes no new connection, and
// sends each one GOAWAY(NO_ERROR) naming the last stream its reader had
// taken; those are served and answered, streams above are ignored, as
// the GOAWAY told the client, and each connection closes (FIN) once none
// is left. Drain returns nil once every connection has closed, or, when
// ctx ends first, an error wrapping its cause; either way it then closes
// the server (Close), which cuts what is still open.
func (s *Server) Drain(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if !s.draining {
		s.draining, s.drained = true, make(chan struct{})
		if s.ln != nil {
			s.ln.Close()
		}
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	if len(s.conns) == 0 {
		s.drainedLocked()
	}
	drained := s.drained
	s.mu.Unlock()
	for _, c := range conns {
		c.startDrain()
	}
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		err = fmt.Errorf("grpcwire: drain: %w", context.Cause(ctx))
	}
	s.Close()
	return err
}

// maxAttemptCalls bounds the attempt table: past it the oldest call is
// forgotten, and a later attempt of it counts from 1 again. A scenario
// names far fewer calls; a long benchmark naming one per request would
// otherwise grow the table for good.
const maxAttemptCalls = 1 << 16

// attempt counts one more attempt of call and returns its number, from
// 1; 0 for a call without a name, which is not counted. The table holds
// the last maxAttemptCalls calls named, and ClearFaults empties it.
func (s *Server) attempt(call string) int {
	if call == "" {
		return 0
	}
	s.amu.Lock()
	defer s.amu.Unlock()
	if _, ok := s.attempts[call]; !ok {
		if len(s.order) >= maxAttemptCalls {
			delete(s.attempts, s.order[0])
			s.order = s.order[1:]
		}
		s.order = append(s.order, call)
	}
	s.attempts[call]++
	return s.attempts[call]
}

// Counters returns the gRPC side's counters under the names of
// rpcserver's (serverapi.Counters), so that serverapi.ParseCounters
// reads them: requests.<method> counts request HEADERS for a known
// path, requests.other the others, and the handler's own counters
// (exec.*, dedup_hits, key_conflicts) are the handler's, shared with
// rpcbench's wire. Counters the gRPC side has no use for (requests.ctl,
// queue_full, conn_queue_full, out_limit_waits, write_chunks,
// drain_dropped) are 0.
func (s *Server) Counters() serverapi.Fields {
	fs := serverapi.Fields{}
	for _, name := range serverapi.CounterNames() {
		fs[name] = "0"
	}
	add := func(name string, v int64) { fs[name] = strconv.FormatInt(v, 10) }
	for m, n := range s.reqs {
		add("requests."+m, n.Load())
	}
	c := &s.counters
	add("requests.other", c.requestsOther.Load())
	add("expired", c.expired.Load())
	add("unavailable", c.unavailable.Load())
	add("protocol_errors", c.protocolErrors.Load())
	add("conns_accepted", c.connsAccepted.Load())
	s.mu.Lock()
	add("conns_open", int64(len(s.conns)))
	s.mu.Unlock()
	add("goroutines", int64(runtime.NumGoroutine()))
	add("frames_sent", c.framesSent.Load())
	add("faults_fired", c.faultsFired.Load())
	add("canceled", c.canceled.Load())
	add("write_timeouts", c.writeTimeouts.Load())
	add("conns_rejected", c.connsRejected.Load())
	add("streams_refused", c.streamsRefused.Load())
	add("read_timeouts", c.readTimeouts.Load())
	add("calm_closes", c.calmCloses.Load())
	add("log_suppressed", c.logSuppressed.Load())
	s.h.Counters(add)
	return fs
}
