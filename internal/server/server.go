// Package server is rpcserver's transport for rpcbench's own wire
// (internal/proto): it accepts connections, reads and writes frames,
// queues business requests for a bounded pool of workers, enforces the
// server's limits and injects transport faults, and hands each business
// request to a transport.Handler whose payloads it never interprets. Its
// sibling internal/grpcwire serves the same handler over gRPC.
package server

import (
	"errors"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/rpcbench/rpcbench/internal/fault"
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
	faults *fault.Table[Fault]
	queue  *workQueue
	// payloads recycles large request payloads' memory.
	payloads *payloadPool
	done     chan struct{}  // closed by Close
	wg       sync.WaitGroup // workers, connection goroutines, Serve

	connSeq atomic.Uint64 // numbers connections, from 1, for the log
	// limits logs the connections MaxConns refuses (LIMIT events): one
	// line a second at most, however fast a peer connects.
	limits *transport.LimitLog

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

type counters struct {
	requestsCtl, requestsOther                   atomic.Int64
	expired, unavailable, queueFull              atomic.Int64
	connQueueFull                                atomic.Int64
	protocolErrors, connsAccepted, connsRejected atomic.Int64
	outLimitWaits, writeTimeouts                 atomic.Int64
	framesSent, writeChunks, faultsFired         atomic.Int64
	canceled, drainDropped, readTimeouts         atomic.Int64
}

// New validates cfg and starts the worker pool, which serves h. A rule in
// cfg.Faults naming a method h does not serve is refused with a
// *fault.MethodError.
func New(cfg Config, h transport.Handler) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	methods := append([]string(nil), h.Methods()...)
	faults := fault.NewTable[Fault](grammar.Pkg, methods)
	for _, f := range cfg.Faults {
		if err := faults.Add(f); err != nil {
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
		faults:  faults,
		queue:   newWorkQueue(cfg.Workers, cfg.QueueSize),

		payloads: newPayloadPool(),
		done:     make(chan struct{}),
		conns:    make(map[*conn]struct{}),
		counting: make(map[*conn]struct{}),

		connsChanged: make(chan struct{}, 1),
		limits:       transport.NewLimitLog(lg, transport.LimitLogInterval),
	}
	s.wg.Add(cfg.Workers)
	for range cfg.Workers {
		go s.worker()
	}
	return s, nil
}

// AddFault activates a fault rule. A rule naming a method the handler
// does not serve is refused with a *fault.MethodError.
func (s *Server) AddFault(f Fault) error { return s.faults.Set(f, s.log) }

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
	err := transport.Acceptor{Log: s.log, Done: s.done, Stopped: s.stopped, Open: s.open, Closed: ErrClosed}.Serve(ln)
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
	if len(s.conns) >= s.cfg.MaxConns {
		s.counters.connsRejected.Add(1)
		s.limits.Note(serverapi.FlagMaxConns)
		nc.Close()
		return true
	}
	c := newConn(s, nc)
	s.log.Info(serverapi.EventConnOpen, serverapi.KeyConn, c.id, serverapi.KeyRemote, nc.RemoteAddr().String())
	if err := transport.TuneTCP(nc, s.cfg.KeepAlive, s.cfg.WriteTimeout); err != nil {
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
	s.limits.Close()
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
	add("read_timeouts", c.readTimeouts.Load())
	add("streams_refused", 0) // a gRPC-side counter
	add("calm_closes", 0)     // rpcbench's wire closes a flooder as a protocol error
	add("log_suppressed", 0)  // rpcbench's wire logs nothing per frame it refuses
	s.h.Counters(add)
	return fs
}

// method returns the index of a method among the handler's business
// methods, or -1.
func (s *Server) method(name string) int { return slices.Index(s.methods, name) }

// connsLocked returns the open connections; the caller holds s.mu.
func (s *Server) connsLocked() []*conn {
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}
