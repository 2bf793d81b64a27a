// Package proxy is a fault proxy for gRPC over h2c: it stands between a
// user's client and their server, forwards each call stream by stream,
// and, as its rules say, refuses a call before the upstream sees it, or
// forwards it and loses, replaces or holds the upstream's answer. It
// records every attempt it forwarded: what the upstream answered, what
// the client was sent, and when.
//
// Each client connection gets an upstream connection of its own, so a
// fault that closes a client's connection closes only that one. Frames
// are relayed, not requests: HEADERS are decoded and encoded again, DATA
// goes through as it comes, within both peers' flow-control windows, and
// the proxy grants a sender more window only once it has passed on what
// it sent, so memory stays bounded by the windows, whatever a peer does.
package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/rpcbench/rpcbench/internal/cut"
)

// Windows the proxy grants each peer: per stream, and for a connection.
// What a peer sends within them is all the proxy ever holds for it.
const (
	streamWindow = 1 << 20
	connWindow   = 16 << 20
	// maxHeaderList bounds a HEADERS block a peer may send.
	maxHeaderList = 64 << 10
	// maxStreams is the SETTINGS_MAX_CONCURRENT_STREAMS the proxy gives
	// a client.
	maxStreams = 256
	// maxQueued bounds the frames waiting to be written to one peer:
	// control frames a peer provokes (PING, SETTINGS acks) past it close
	// that connection.
	maxQueued = 4096
)

// Config is what a proxy forwards to, and its rules.
type Config struct {
	// Upstream is the server's address, h2c.
	Upstream string
	// Rules are the faults, in order: the first unspent one that matches
	// a call takes it.
	Rules []*Rule
	// Dial, when set, dials the upstream instead of net.Dialer.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// Oracle, when set, counts the executions of the attempts whose
	// method Judged takes (every method when Judged is nil): the proxy
	// reads it before forwarding such an attempt and Settle after the
	// upstream's answer ended, one such attempt at a time (oracle.go).
	Oracle Oracle
	Judged func(method string) bool
	Settle time.Duration
}

// Attempt is one call stream as the proxy saw it.
type Attempt struct {
	// Conn numbers the client connection it came on, from 1; Stream is
	// its stream id there.
	Conn   int    `json:"conn"`
	Stream uint32 `json:"stream"`
	// Method is "pkg.Service/Method".
	Method string `json:"method"`
	// Key is its idempotency-key metadata, Previous its
	// grpc-previous-rpc-attempts, Timeout its grpc-timeout: "" when
	// absent.
	Key      string `json:"key,omitempty"`
	Previous string `json:"previous,omitempty"`
	Timeout  string `json:"timeout,omitempty"`
	// Body identifies the request's bytes (the first 16 hex digits of
	// their SHA-256), once the client ended its request; "" before, or
	// for a call refused before its body came.
	Body string `json:"body,omitempty"`
	// Rule is the rule that took it, "" for none.
	Rule string `json:"rule,omitempty"`
	// Forwarded: the upstream was sent the call.
	Forwarded bool `json:"forwarded"`
	// Upstream is what the upstream answered: its grpc-status's name,
	// RST_<code>, CONN_CLOSED, or "" when it had not answered.
	Upstream string `json:"upstream,omitempty"`
	// Client is what the client was sent: a grpc-status's name,
	// RST_<code>, CONN_CLOSED (the proxy closed its connection), or ""
	// when it was sent nothing (it gave up first, or the proxy held the
	// answer).
	Client string `json:"client,omitempty"`
	// ClientReset is set when the client reset the stream (its code).
	ClientReset string `json:"client_reset,omitempty"`
	// Start is when the call's HEADERS came; Answered when the
	// upstream's answer ended; Ended when the client's stream ended.
	Start    time.Time `json:"start"`
	Answered time.Time `json:"answered,omitzero"`
	Ended    time.Time `json:"ended,omitzero"`
	// Pushback is the grpc-retry-pushback-ms the client was sent, ""
	// for none.
	Pushback string `json:"pushback,omitempty"`
	// Executions is how often the oracle saw the attempt execute (late
	// ones included); nil when no oracle judged it. OracleErr says why
	// an oracle that should have judged it could not.
	Executions *int   `json:"executions,omitempty"`
	OracleErr  string `json:"oracle_error,omitempty"`
	// Late counts the executions among Executions that came after the
	// read that followed its answer (seen by the next read before).
	Late int `json:"late,omitempty"`
}

// Proxy is a running fault proxy.
type Proxy struct {
	cfg   Config
	ln    net.Listener
	rules rules

	// ctx ends at Close, and with it the oracle's reads and waits.
	ctx    context.Context
	cancel context.CancelFunc
	// gate holds one judged attempt at a time between the oracle's reads;
	// judged is the oracle's state (oracle.go).
	gate   chan struct{}
	judged judgeState

	mu       sync.Mutex
	attempts []*Attempt
	sessions map[*session]bool
	nconn    int
	closed   bool
	wg       sync.WaitGroup
	// Errors counts the connections closed for a peer's protocol error,
	// by side; read with Errors.
	errs map[string]int
	// unrecorded counts the attempts past maxAttempts, forwarded and not
	// recorded; read with Unrecorded.
	unrecorded int
}

// maxAttempts bounds the attempts a proxy records: about 100 MB of
// them.
var maxAttempts = 250_000

// Unrecorded returns how many attempts came after the record was full
// (maxAttempts): forwarded, and judged by nothing.
func (p *Proxy) Unrecorded() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unrecorded
}

// Listen listens on addr for clients.
func Listen(addr string, cfg Config) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p := &Proxy{cfg: cfg, ln: ln, sessions: map[*session]bool{}, errs: map[string]int{}, gate: make(chan struct{}, 1)}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.rules.list = cfg.Rules
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Serve accepts clients until Close.
func (p *Proxy) Serve() error {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return nil
			}
			return fmt.Errorf("proxy: %w", err)
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return nil
		}
		p.nconn++
		s := newSession(p, p.nconn, c)
		p.sessions[s] = true
		p.wg.Add(1)
		p.mu.Unlock()
		go func() {
			defer p.wg.Done()
			s.run()
			p.mu.Lock()
			delete(p.sessions, s)
			p.mu.Unlock()
		}()
	}
}

// Close stops accepting, closes every connection and waits for their
// goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for s := range p.sessions {
		s.shut()
	}
	p.mu.Unlock()
	p.cancel()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

// Attempts returns a copy of every attempt so far, in arrival order.
func (p *Proxy) Attempts() []Attempt {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Attempt, len(p.attempts))
	for i, a := range p.attempts {
		out[i] = *a
	}
	return out
}

// Errors returns how many connections the proxy closed for a peer's
// protocol error, by side ("client", "upstream").
func (p *Proxy) Errors() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.errs {
		out[k] = v
	}
	return out
}

// record updates a's fields under the proxy's lock.
func (p *Proxy) record(a *Attempt, f func(a *Attempt)) {
	p.mu.Lock()
	f(a)
	p.mu.Unlock()
}

// peer is one side of a session: its connection, its framer, the frames
// queued for it, and the flow-control windows it granted the proxy.
type peer struct {
	side string // "client" or "upstream"
	nc   net.Conn
	// fr writes to bw, which the writer flushes once the queue is
	// empty: the frames of one burst leave in one write.
	fr   *http2.Framer
	bw   *bufio.Writer
	enc  *hpack.Encoder
	ebuf bytes.Buffer

	// Guarded by session.mu:
	queue    []func() error
	connWin  int64 // what the peer lets the proxy send on the connection
	initWin  int64 // its SETTINGS_INITIAL_WINDOW_SIZE for new streams
	maxFrame uint32
	wake     chan struct{}
}

// pstream is one call's pair of streams.
type pstream struct {
	cid, uid uint32
	a        *Attempt
	rule     *Rule
	// toUp and toClient are DATA waiting for the receiver's window, and
	// whether END_STREAM follows it; upWin and clientWin are the
	// stream's windows the receivers granted.
	toUp, toClient       []byte
	toUpEnd, toClientEnd bool
	upWin, clientWin     int64
	forwarded            bool      // the upstream stream is open
	body                 hash.Hash // the request's bytes, hashed as they come
	// delay is a Delay rule's timer, stopped when the pair is forgotten
	// or the session ends.
	delay              *time.Timer
	upDone, clientDone bool
	trailers           []hpack.HeaderField // held until toClient is sent
	upTrailers         []hpack.HeaderField // the client's, held until toUp is sent
	holding            bool                // the answer is withheld (rule)
	upHeaders          []hpack.HeaderField // the upstream's first HEADERS, held by Late
	// lateData and lateTrailers are the rest of the answer a Late rule
	// holds (at most streamWindow of DATA); cut is set once a CutData
	// rule has cut the answer.
	lateData     []byte
	lateTrailers []hpack.HeaderField
	lateEnd      bool
	cut          bool
	// upEnd, for a judged attempt, is closed once the upstream's side
	// has ended (answered, reset, or its connection gone).
	upEnd chan struct{}
}

// lastGoodOr is the last stream a GOAWAY already promised, or def when
// none was sent.
func (s *session) lastGoodOr(def uint32) uint32 {
	if s.goingAway {
		return s.lastGood
	}
	return def
}

// upEndedLocked closes ps.upEnd, once.
func (ps *pstream) upEndedLocked() {
	if ps.upEnd != nil {
		select {
		case <-ps.upEnd:
		default:
			close(ps.upEnd)
		}
	}
}

// session is one client connection and its upstream connection.
type session struct {
	p  *Proxy
	id int
	cl *peer
	up *peer

	mu      sync.Mutex
	streams map[uint32]*pstream // by client stream id
	byUp    map[uint32]*pstream
	nextUp  uint32
	// goingAway: a GoAway rule sent the client GOAWAY with lastGood as
	// its last stream; streams above it are refused, and the connection
	// closes once none is left.
	goingAway bool
	lastGood  uint32
	// closedClient: the proxy closed the client's connection (a rule,
	// or the upstream's end), not the client; resetClient: with a TCP
	// RST.
	closedClient, resetClient bool
	// bufferedUp is the DATA from the client not yet sent on, across
	// its streams: at most the connection window the proxy granted.
	bufferedUp int
	done       chan struct{}
	// ncMu guards upNC, the upstream's connection as shut closes it
	// (s.up is set under mu, which shut must not take).
	ncMu     sync.Mutex
	upNC     net.Conn
	shutOnce sync.Once
	err      error
}

func newSession(p *Proxy, id int, c net.Conn) *session {
	s := &session{p: p, id: id, streams: map[uint32]*pstream{}, byUp: map[uint32]*pstream{}, nextUp: 1, done: make(chan struct{})}
	s.cl = newPeer("client", c)
	return s
}

func newPeer(side string, nc net.Conn) *peer {
	// Buffered both ways: a frame's header and payload come in one read,
	// and a burst of frames leaves in one write. (The client's preface
	// is read from nc before the framer reads anything.)
	bw := bufio.NewWriterSize(nc, 32<<10)
	pr := &peer{side: side, nc: nc, bw: bw, fr: http2.NewFramer(bw, bufio.NewReaderSize(nc, 32<<10)),
		connWin: 65535, initWin: 65535, maxFrame: 16384, wake: make(chan struct{}, 1)}
	pr.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	pr.fr.MaxHeaderListSize = maxHeaderList
	pr.fr.SetMaxReadFrameSize(1 << 20)
	pr.enc = hpack.NewEncoder(&pr.ebuf)
	return pr
}

// shut closes both connections; the readers and writers then end.
func (s *session) shut() { s.shutFor("") }

// shutFor is shut, counting the session's end against side's malformed
// input when side is set and the session was not already ending.
func (s *session) shutFor(side string) {
	s.shutOnce.Do(func() {
		if side != "" {
			s.p.mu.Lock()
			s.p.errs[side]++
			s.p.mu.Unlock()
		}
		s.ncMu.Lock()
		close(s.done)
		s.cl.nc.Close()
		if s.upNC != nil {
			s.upNC.Close()
		}
		s.ncMu.Unlock()
	})
}

// protocolError closes the session for side's malformed input, counted
// once.
func (s *session) protocolError(side string, err error) { s.shutFor(side) }

func (s *session) run() {
	defer s.shut()
	// The client's preface, then the upstream's connection.
	s.cl.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	pre := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(s.cl.nc, pre); err != nil || string(pre) != http2.ClientPreface {
		s.protocolError("client", errors.New("no HTTP/2 preface"))
		return
	}
	s.cl.nc.SetReadDeadline(time.Time{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	dial := s.p.cfg.Dial
	if dial == nil {
		var d net.Dialer
		dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	uc, err := dial(ctx, s.p.cfg.Upstream)
	cancel()
	if err != nil {
		// The client is told GOAWAY: nothing it sent was processed.
		s.cl.fr.WriteSettings()
		s.cl.fr.WriteGoAway(0, http2.ErrCodeRefusedStream, []byte("proxy: upstream: "+err.Error()))
		s.cl.bw.Flush()
		return
	}
	s.ncMu.Lock()
	select {
	case <-s.done: // closed while dialling
		s.ncMu.Unlock()
		uc.Close()
		return
	default:
	}
	s.upNC = uc
	s.ncMu.Unlock()
	s.mu.Lock()
	s.up = newPeer("upstream", uc)
	s.mu.Unlock()
	if _, err := uc.Write([]byte(http2.ClientPreface)); err != nil {
		return
	}
	settings := []http2.Setting{{ID: http2.SettingInitialWindowSize, Val: streamWindow}, {ID: http2.SettingMaxHeaderListSize, Val: maxHeaderList}}
	s.enqueue(s.up, func() error {
		return s.up.fr.WriteSettings(append(settings, http2.Setting{ID: http2.SettingEnablePush, Val: 0})...)
	})
	s.enqueue(s.up, func() error { return s.up.fr.WriteWindowUpdate(0, connWindow-65535) })
	s.enqueue(s.cl, func() error {
		return s.cl.fr.WriteSettings(append(settings, http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: maxStreams})...)
	})
	s.enqueue(s.cl, func() error { return s.cl.fr.WriteWindowUpdate(0, connWindow-65535) })
	var wg sync.WaitGroup
	for _, pr := range []*peer{s.cl, s.up} {
		wg.Add(2)
		go func() { defer wg.Done(); s.write(pr) }()
		go func() { defer wg.Done(); s.read(pr) }()
	}
	wg.Wait()
	s.finish()
}

// closeClientLocked closes the client's connection once what is queued
// for it has gone: the streams still open there are recorded as sent
// CONN_CLOSED.
func (s *session) closeClientLocked(why string) {
	s.closedClient = true
	cl, rst := s.cl, s.resetClient
	s.enqueueLocked(cl, func() error {
		cl.bw.Flush() // what was queued before it goes first
		if tc, ok := cl.nc.(*net.TCPConn); ok && rst {
			tc.SetLinger(0) // the close sends RST, not FIN
		}
		cl.nc.Close()
		return errors.New(why)
	})
}

// sendLate sends the answer a Late rule held, unless the client gave up
// meanwhile.
func (s *session) sendLate(ps *pstream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
		return
	default:
	}
	if ps.clientDone {
		return
	}
	ps.holding = false
	if ps.upHeaders != nil {
		s.writeHeadersLocked(s.cl, ps.cid, ps.upHeaders, false)
	}
	if ps.upHeaders == nil && len(ps.lateData) == 0 && ps.lateTrailers != nil {
		// Trailers-only.
		s.writeHeadersLocked(s.cl, ps.cid, ps.lateTrailers, true)
		s.pushbackLocked(ps, ps.lateTrailers)
		s.clientEndedLocked(ps, codeName(atoi(header(ps.lateTrailers, "grpc-status"))))
		return
	}
	ps.toClient = append(ps.toClient, ps.lateData...)
	ps.lateData = nil
	ps.toClientEnd = ps.lateEnd && ps.lateTrailers == nil
	ps.trailers = ps.lateTrailers
	if ps.trailers == nil && !ps.toClientEnd {
		// The upstream's answer ended by its reset or its connection:
		// the client hears of it as the upstream ended.
		s.resetClientLocked(ps, http2.ErrCodeInternal)
		return
	}
	s.flushLocked(s.cl, ps)
}

// cutLocked sends the client the answer's first DATA frame cut in the
// middle: its frame header, announcing the whole payload, and half of
// it; then it closes the client's connection: a CutData rule.
func (s *session) cutLocked(ps *pstream, f *http2.DataFrame, payload []byte) {
	ps.cut = true
	half := len(payload) / 2
	frame := make([]byte, 9, 9+half)
	frame[0], frame[1], frame[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	frame[3] = byte(http2.FrameData)
	binary.BigEndian.PutUint32(frame[5:], ps.cid)
	frame = append(frame, payload[:half]...)
	cl := s.cl
	s.enqueueLocked(cl, func() error { _, err := cl.bw.Write(frame); return err })
	// The frame and the rest of the answer are dropped: their window
	// goes back at once.
	if n := uint32(len(payload)); n > 0 { // padding was credited before
		s.creditLocked(s.up, ps.uid, n)
	}
	s.p.record(ps.a, func(a *Attempt) { a.Client, a.Ended = "CUT_DATA", time.Now() })
	ps.clientDone = true
	s.closeClientLocked("cut by rule")
	if f.StreamEnded() {
		s.upstreamEndedLocked(ps, "")
	}
	s.forgetLocked(ps)
}

// finish records, once both connections are gone, how each stream still
// open ended.
func (s *session) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for _, st := range s.streams {
		if st.delay != nil {
			st.delay.Stop()
		}
		st.upEndedLocked()
		s.p.record(st.a, func(a *Attempt) {
			if a.Ended.IsZero() {
				a.Ended = now
			}
			if st.forwarded && a.Upstream == "" && !st.upDone {
				a.Upstream = "CONN_CLOSED"
			}
			if s.closedClient && a.Client == "" && a.ClientReset == "" {
				a.Client = "CONN_CLOSED"
			}
		})
	}
}

// enqueue queues a write for pr, in order; a peer that provokes more
// queued frames than maxQueued is closed. The caller must not hold s.mu
// (enqueueLocked is for callers that do).
func (s *session) enqueue(pr *peer, w func() error) {
	s.mu.Lock()
	s.enqueueLocked(pr, w)
	s.mu.Unlock()
}

func (s *session) enqueueLocked(pr *peer, w func() error) {
	if len(pr.queue) >= maxQueued {
		// The frames queued for a peer are its own doing: acks of its
		// PINGs and SETTINGS, credit for its DATA.
		go s.protocolError(pr.side, fmt.Errorf("over %d frames queued for the %s", maxQueued, pr.side))
		return
	}
	pr.queue = append(pr.queue, w)
	select {
	case pr.wake <- struct{}{}:
	default:
	}
}

// write writes pr's queue in order until the session ends.
func (s *session) write(pr *peer) {
	for {
		select {
		case <-s.done:
			return
		case <-pr.wake:
		}
		for {
			s.mu.Lock()
			if len(pr.queue) == 0 {
				s.mu.Unlock()
				break
			}
			w := pr.queue[0]
			pr.queue = pr.queue[1:]
			s.mu.Unlock()
			if err := w(); err != nil {
				s.shut()
				return
			}
		}
		if err := pr.bw.Flush(); err != nil {
			s.shut()
			return
		}
	}
}

// read reads pr's frames until its connection ends.
func (s *session) read(pr *peer) {
	for {
		f, err := pr.fr.ReadFrame()
		if err != nil {
			var ce http2.ConnectionError
			var se http2.StreamError
			switch {
			case errors.As(err, &se):
				// A malformed stream: that stream only.
				s.mu.Lock()
				s.resetLocked(pr, se.StreamID, se.Code)
				s.mu.Unlock()
				continue
			case errors.As(err, &ce), errors.Is(err, http2.ErrFrameTooLarge):
				s.protocolError(pr.side, err)
			case pr == s.up && errors.Is(err, io.EOF):
				// The upstream closed, perhaps right after its last
				// trailers: what is queued for the client goes first.
				s.mu.Lock()
				s.closeClientLocked("upstream closed")
				s.mu.Unlock()
				return
			default:
				s.shut()
			}
			return
		}
		if err := s.frame(pr, f); err != nil {
			s.protocolError(pr.side, err)
			return
		}
	}
}

// frame handles one frame from pr.
func (s *session) frame(pr *peer, f http2.Frame) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		err := f.ForeachSetting(func(st http2.Setting) error {
			if err := st.Valid(); err != nil {
				return err
			}
			switch st.ID {
			case http2.SettingInitialWindowSize:
				delta := int64(st.Val) - pr.initWin
				pr.initWin = int64(st.Val)
				for _, ps := range s.streams {
					if pr == s.up {
						ps.upWin += delta
					} else {
						ps.clientWin += delta
					}
				}
			case http2.SettingMaxFrameSize:
				pr.maxFrame = st.Val
			case http2.SettingHeaderTableSize:
				// The peer's decoder's table: the encoder, which only its
				// writer touches, learns it in order.
				v := st.Val
				s.enqueueLocked(pr, func() error { pr.enc.SetMaxDynamicTableSizeLimit(v); return nil })
			}
			return nil
		})
		if err != nil {
			return err
		}
		s.enqueueLocked(pr, func() error { return pr.fr.WriteSettingsAck() })
		s.flushAllLocked(pr)
	case *http2.PingFrame:
		if !f.IsAck() {
			data := f.Data
			s.enqueueLocked(pr, func() error { return pr.fr.WritePing(true, data) })
		}
	case *http2.WindowUpdateFrame:
		if f.StreamID == 0 {
			pr.connWin += int64(f.Increment)
			s.flushAllLocked(pr)
			return nil
		}
		ps := s.streamOf(pr, f.StreamID)
		if ps == nil {
			return nil
		}
		if pr == s.up {
			ps.upWin += int64(f.Increment)
		} else {
			ps.clientWin += int64(f.Increment)
		}
		s.flushLocked(pr, ps)
	case *http2.GoAwayFrame:
		// The peer will take no new streams: nor will the proxy, on
		// this pair. Streams it still serves go on.
		if pr == s.up {
			last := uint32(0)
			for cid, ps := range s.streams {
				if ps.forwarded && ps.uid <= f.LastStreamID && cid > last {
					last = cid
				}
			}
			// Streams above last were not processed by the upstream, and
			// the client may send them again: none of them, nor any new
			// one, is forwarded from now on. Those below it still waiting
			// to be forwarded (a gate, a delay) are refused.
			if !s.goingAway || last < s.lastGood {
				s.goingAway, s.lastGood = true, last
			}
			for _, ps := range s.streams {
				if !ps.forwarded && !ps.clientDone && ps.cid <= last {
					s.resetClientLocked(ps, http2.ErrCodeRefusedStream)
				}
			}
			code := f.ErrCode
			s.enqueueLocked(s.cl, func() error { return s.cl.fr.WriteGoAway(last, code, nil) })
		}
	case *http2.MetaHeadersFrame:
		if pr == s.cl {
			return s.clientHeaders(f)
		}
		s.upstreamHeaders(f)
	case *http2.DataFrame:
		return s.data(pr, f)
	case *http2.RSTStreamFrame:
		s.reset(pr, f)
	}
	return nil
}

// streamOf finds the pair of pr's stream id.
func (s *session) streamOf(pr *peer, id uint32) *pstream {
	if pr == s.up {
		return s.byUp[id]
	}
	return s.streams[id]
}

// header returns the first value of name in fields.
func header(fields []hpack.HeaderField, name string) string {
	for _, f := range fields {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// writeHeaders encodes fields for pr and queues them as HEADERS on id.
func (s *session) writeHeadersLocked(pr *peer, id uint32, fields []hpack.HeaderField, end bool) {
	maxFrame := int(pr.maxFrame) // read under s.mu, as SETTINGS write it
	s.enqueueLocked(pr, func() error {
		pr.ebuf.Reset()
		for _, f := range fields {
			pr.enc.WriteField(f)
		}
		block := pr.ebuf.Bytes()
		first := true
		for first || len(block) > 0 {
			n := min(len(block), maxFrame)
			chunk := block[:n]
			block = block[n:]
			var err error
			if first {
				err = pr.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: chunk, EndStream: end, EndHeaders: len(block) == 0})
				first = false
			} else {
				err = pr.fr.WriteContinuation(id, len(block) == 0, chunk)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// trailersOnly answers the client's stream with a grpc-status alone.
func (s *session) trailersOnlyLocked(ps *pstream, code int, msg string, extra ...hpack.HeaderField) {
	fields := []hpack.HeaderField{{Name: ":status", Value: "200"}, {Name: "content-type", Value: "application/grpc"},
		{Name: "grpc-status", Value: strconv.Itoa(code)}, {Name: "grpc-message", Value: msg}}
	fields = append(fields, extra...)
	s.writeHeadersLocked(s.cl, ps.cid, fields, true)
	s.pushbackLocked(ps, fields)
	s.clientEndedLocked(ps, codeName(code))
}

// clientEndedLocked records that the client's stream ended with what.
func (s *session) clientEndedLocked(ps *pstream, what string) {
	if ps.clientDone {
		return
	}
	ps.clientDone = true
	s.p.record(ps.a, func(a *Attempt) {
		if a.Client == "" {
			a.Client = what
		}
		a.Ended = time.Now()
	})
	s.forgetLocked(ps)
}

// forgetLocked drops a pair once both sides are done, and closes a
// connection that went away once its last stream has.
func (s *session) forgetLocked(ps *pstream) {
	if ps.clientDone && (ps.upDone || !ps.forwarded) {
		delete(s.streams, ps.cid)
		if ps.forwarded {
			delete(s.byUp, ps.uid)
		}
		// DATA still waiting counted against its sender's connection
		// window (RFC 9113 6.9): given back, or the connection stalls.
		if n := uint32(len(ps.toUp)); n > 0 {
			s.bufferedUp -= int(n)
			cl := s.cl
			s.enqueueLocked(cl, func() error { return cl.fr.WriteWindowUpdate(0, n) })
		}
		if n := uint32(len(ps.toClient) + len(ps.lateData)); n > 0 && s.up != nil {
			up := s.up
			s.enqueueLocked(up, func() error { return up.fr.WriteWindowUpdate(0, n) })
		}
		ps.toUp, ps.toClient, ps.lateData = nil, nil, nil
		if ps.delay != nil {
			ps.delay.Stop()
		}
	}
	if s.goingAway && len(s.streams) == 0 {
		s.closeClientLocked("closed after GOAWAY")
	}
}

// clientHeaders takes a call, or a client's trailers.
func (s *session) clientHeaders(f *http2.MetaHeadersFrame) error {
	id := f.StreamID
	if ps := s.streams[id]; ps != nil {
		// Trailers from the client: forwarded as they are, after the
		// DATA still waiting for the upstream's window.
		if len(ps.toUp) > 0 || !ps.forwarded {
			ps.upTrailers = f.RegularFields()
			return nil
		}
		if !ps.upDone {
			s.writeHeadersLocked(s.up, ps.uid, f.RegularFields(), f.StreamEnded())
		}
		return nil
	}
	if id%2 == 0 {
		return fmt.Errorf("client opened even stream %d", id)
	}
	method := f.PseudoValue("path")
	if len(method) > 0 && method[0] == '/' {
		method = method[1:]
	}
	if len(s.streams) >= maxStreams {
		// Past the SETTINGS_MAX_CONCURRENT_STREAMS it was given.
		s.enqueueLocked(s.cl, func() error { return s.cl.fr.WriteRSTStream(id, http2.ErrCodeRefusedStream) })
		return nil
	}
	if s.goingAway && id > s.lastGood {
		// Past the GOAWAY's last stream: never processed, as promised.
		// Not an attempt the upstream could have seen; refused.
		s.enqueueLocked(s.cl, func() error { return s.cl.fr.WriteRSTStream(id, http2.ErrCodeRefusedStream) })
		return nil
	}
	a := &Attempt{Conn: s.id, Stream: id, Method: method, Start: time.Now(),
		Key: header(f.RegularFields(), "idempotency-key"), Previous: header(f.RegularFields(), "grpc-previous-rpc-attempts"),
		Timeout: header(f.RegularFields(), "grpc-timeout")}
	ps := &pstream{cid: id, a: a, clientWin: s.cl.initWin, upWin: s.up.initWin, body: sha256.New()}
	ps.rule = s.p.rules.take(method)
	if ps.rule != nil {
		a.Rule = ps.rule.String()
	}
	s.p.mu.Lock()
	if len(s.p.attempts) < maxAttempts {
		s.p.attempts = append(s.p.attempts, a)
	} else {
		// Forwarded as any other, and forgotten once it ends: the
		// record's memory is bounded, whatever a client sends.
		s.p.unrecorded++
	}
	s.p.mu.Unlock()
	s.streams[id] = ps
	if ps.rule != nil {
		switch ps.rule.Kind {
		case Unavailable:
			var extra []hpack.HeaderField
			if v, ok := ps.rule.pushback(); ok {
				extra = append(extra, hpack.HeaderField{Name: "grpc-retry-pushback-ms", Value: v})
			}
			s.trailersOnlyLocked(ps, 14, "proxy: refused before forwarding", extra...)
			return nil
		case Refuse:
			s.resetClientLocked(ps, http2.ErrCodeRefusedStream)
			return nil
		case GoAway:
			last := uint32(0)
			if id > 2 {
				last = id - 2
			}
			s.goingAway, s.lastGood = true, last
			s.enqueueLocked(s.cl, func() error { return s.cl.fr.WriteGoAway(last, http2.ErrCodeNo, []byte("proxy: goaway_below")) })
			ps.clientDone = true
			s.p.record(a, func(a *Attempt) { a.Client, a.Ended = "GOAWAY", time.Now() })
			s.forgetLocked(ps)
			return nil
		case Delay:
			fields := append([]hpack.HeaderField(nil), f.Fields...)
			end := f.StreamEnded()
			ps.delay = time.AfterFunc(ps.rule.spec.Delay, func() {
				s.mu.Lock()
				defer s.mu.Unlock()
				select {
				case <-s.done:
					return
				default:
				}
				switch {
				case ps.clientDone:
				case s.goingAway && id > s.lastGood:
					s.resetClientLocked(ps, http2.ErrCodeRefusedStream) // never forwarded
				default:
					s.sendLocked(ps, fields, end)
				}
			})
			return nil
		case Drop, Close, UnavailableAfter, NoReply, GoAwayCover, Reset, Late:
			ps.holding = true
		}
	}
	s.sendLocked(ps, f.Fields, f.StreamEnded())
	return nil
}

// forwardLocked opens the upstream stream with the call's header fields,
// then sends what DATA came meanwhile.
func (s *session) forwardLocked(ps *pstream, fields []hpack.HeaderField, end bool) {
	ps.uid = s.nextUp
	s.nextUp += 2
	ps.forwarded = true
	s.byUp[ps.uid] = ps
	s.p.record(ps.a, func(a *Attempt) { a.Forwarded = true })
	s.writeHeadersLocked(s.up, ps.uid, fields, end && len(ps.toUp) == 0 && !ps.toUpEnd)
	if end {
		return
	}
	s.flushLocked(s.up, ps)
}

// data relays DATA from pr.
func (s *session) data(pr *peer, f *http2.DataFrame) error {
	ps := s.streamOf(pr, f.StreamID)
	n := f.Length
	if ps == nil {
		// A stream already reset or ended: give the window back.
		if n > 0 {
			s.enqueueLocked(pr, func() error { return pr.fr.WriteWindowUpdate(0, n) })
		}
		return nil
	}
	payload := f.Data()
	if pr == s.cl {
		if len(ps.toUp)+len(payload) > streamWindow || s.bufferedUp+len(payload) > connWindow {
			return fmt.Errorf("client sent stream %d more DATA than its windows", f.StreamID)
		}
		s.bufferedUp += len(payload)
		ps.toUp = append(ps.toUp, payload...)
		ps.toUpEnd = ps.toUpEnd || f.StreamEnded()
		ps.body.Write(payload)
		if f.StreamEnded() {
			sum := hex.EncodeToString(ps.body.Sum(nil))[:16]
			s.p.record(ps.a, func(a *Attempt) { a.Body = sum })
		}
		if n > uint32(len(payload)) { // padding: credited at once
			s.creditLocked(pr, f.StreamID, n-uint32(len(payload)))
		}
		if ps.forwarded {
			s.flushLocked(s.up, ps)
		}
		return nil
	}
	// From the upstream: the answer.
	if n > uint32(len(payload)) && !(ps.holding || ps.clientDone) { // padding: credited at once
		s.creditLocked(pr, f.StreamID, n-uint32(len(payload)))
	}
	if ps.holding && !ps.clientDone && ps.rule.Kind == Late {
		// Held for later: its window is given back as it is sent to the
		// client (flushLocked), or dropped (forgetLocked), so that the
		// upstream can send no more than the stream's window meanwhile.
		if len(ps.lateData)+len(payload) > streamWindow {
			return fmt.Errorf("upstream sent stream %d more DATA than its window", f.StreamID)
		}
		ps.lateData = append(ps.lateData, payload...)
		ps.lateEnd = ps.lateEnd || f.StreamEnded()
		if pad := n - uint32(len(payload)); pad > 0 {
			s.creditLocked(pr, ps.uid, pad)
		}
		if f.StreamEnded() {
			s.upstreamEndedLocked(ps, "")
		}
		return nil
	}
	if ps.holding || ps.clientDone {
		// Withheld: dropped here, the window given back at once.
		if n > 0 {
			s.creditLocked(pr, ps.uid, n)
		}
		if f.StreamEnded() {
			s.upstreamEndedLocked(ps, "")
		}
		return nil
	}
	if len(ps.toClient)+len(payload) > streamWindow {
		return fmt.Errorf("upstream sent stream %d more DATA than its window", f.StreamID)
	}
	if ps.rule != nil && ps.rule.Kind == CutData && !ps.cut && len(payload) > 0 {
		s.cutLocked(ps, f, payload)
		return nil
	}
	ps.toClient = append(ps.toClient, payload...)
	ps.toClientEnd = ps.toClientEnd || f.StreamEnded()
	if f.StreamEnded() {
		s.upstreamEndedLocked(ps, "")
	}
	s.flushLocked(s.cl, ps)
	return nil
}

// flushAllLocked sends what every stream has waiting for pr.
func (s *session) flushAllLocked(pr *peer) {
	for _, ps := range s.streams {
		s.flushLocked(pr, ps)
	}
}

// flushLocked sends ps's DATA waiting for pr, within pr's windows, and
// grants the sender the window of what went.
func (s *session) flushLocked(pr *peer, ps *pstream) {
	buf, end, win, id := &ps.toUp, &ps.toUpEnd, &ps.upWin, ps.uid
	src := s.cl
	sid := ps.cid
	if pr == s.cl {
		buf, end, win, id = &ps.toClient, &ps.toClientEnd, &ps.clientWin, ps.cid
		src, sid = s.up, ps.uid
		if ps.clientDone {
			return
		}
	} else if !ps.forwarded || ps.upDone && !ps.toUpEnd {
		return
	}
	for len(*buf) > 0 && *win > 0 && pr.connWin > 0 {
		n := min(int64(len(*buf)), *win, pr.connWin, int64(pr.maxFrame))
		if pr == s.up {
			s.bufferedUp -= int(n)
		}
		chunk := append([]byte(nil), (*buf)[:n]...)
		*buf = (*buf)[n:]
		*win -= n
		pr.connWin -= n
		last := len(*buf) == 0 && *end
		s.enqueueLocked(pr, func() error { return pr.fr.WriteData(id, last, chunk) })
		if last {
			*end = false
			s.sentEndLocked(pr, ps)
		}
		// The sender may send as much again.
		s.creditLocked(src, sid, uint32(n))
	}
	if len(*buf) == 0 && *end {
		// END_STREAM with no DATA left, or the trailers.
		*end = false
		s.enqueueLocked(pr, func() error { return pr.fr.WriteData(id, true, nil) })
		s.sentEndLocked(pr, ps)
	}
	if pr == s.up && len(ps.toUp) == 0 && ps.upTrailers != nil && ps.forwarded && !ps.upDone {
		tr := ps.upTrailers
		ps.upTrailers = nil
		s.writeHeadersLocked(s.up, ps.uid, tr, true)
	}
	if pr == s.cl && len(ps.toClient) == 0 && ps.trailers != nil {
		tr := ps.trailers
		ps.trailers = nil
		s.writeHeadersLocked(s.cl, ps.cid, tr, true)
		s.pushbackLocked(ps, tr)
		s.clientEndedLocked(ps, codeName(atoi(header(tr, "grpc-status"))))
	}
}

// sentEndLocked notes that END_STREAM went to pr on ps.
func (s *session) sentEndLocked(pr *peer, ps *pstream) {
	if pr == s.cl {
		s.clientEndedLocked(ps, "NO_STATUS")
	}
}

// upstreamHeaders relays the upstream's HEADERS: the answer's first, or
// its trailers.
func (s *session) upstreamHeaders(f *http2.MetaHeadersFrame) {
	ps := s.byUp[f.StreamID]
	if ps == nil {
		return
	}
	fields := f.Fields
	status := header(fields, "grpc-status")
	if ps.holding || ps.clientDone {
		if ps.holding && ps.rule.Kind == Late {
			if f.StreamEnded() {
				ps.lateTrailers = fields
			} else {
				ps.upHeaders = fields
			}
		}
		if f.StreamEnded() {
			s.upstreamEndedLocked(ps, codeName(atoi(status)))
		}
		return
	}
	switch {
	case !f.StreamEnded():
		s.writeHeadersLocked(s.cl, ps.cid, fields, false)
	case len(ps.toClient) > 0:
		// Trailers after DATA still waiting for the client's window.
		ps.trailers = fields
		s.upstreamEndedLocked(ps, codeName(atoi(status)))
	default:
		s.upstreamEndedLocked(ps, codeName(atoi(status)))
		s.writeHeadersLocked(s.cl, ps.cid, fields, true)
		s.pushbackLocked(ps, fields)
		s.clientEndedLocked(ps, codeName(atoi(status)))
	}
}

// upstreamEndedLocked records the upstream's answer, and applies a
// rule that waited for it.
func (s *session) upstreamEndedLocked(ps *pstream, what string) {
	if ps.upDone {
		return
	}
	ps.upDone = true
	ps.upEndedLocked()
	s.p.record(ps.a, func(a *Attempt) {
		if what != "" || a.Upstream == "" {
			a.Upstream = what
		}
		a.Answered = time.Now()
	})
	if ps.holding && !ps.clientDone {
		switch ps.rule.Kind {
		case Drop:
			s.resetClientLocked(ps, ps.rule.Code)
		case Close:
			s.p.record(ps.a, func(a *Attempt) { a.Client, a.Ended = "CONN_CLOSED", time.Now() })
			ps.clientDone = true
			s.closeClientLocked("closed by rule")
		case UnavailableAfter:
			s.trailersOnlyLocked(ps, 14, "proxy: answer lost after the upstream answered")
		case NoReply:
			// Held until the client gives up.
		case GoAwayCover:
			// The last stream covers every stream forwarded so far, which
			// the upstream may have processed; those above it were not.
			last := ps.cid
			for cid, o := range s.streams {
				if o.forwarded && cid > last {
					last = cid
				}
			}
			// A later GOAWAY may not raise the last stream an earlier one named.
			last = min(last, s.lastGoodOr(last))
			s.goingAway, s.lastGood = true, last
			s.enqueueLocked(s.cl, func() error { return s.cl.fr.WriteGoAway(last, http2.ErrCodeNo, []byte("proxy: goaway_cover")) })
			s.p.record(ps.a, func(a *Attempt) { a.Client, a.Ended = "GOAWAY_COVER", time.Now() })
			ps.clientDone = true
			s.closeClientLocked("closed by rule")
		case Reset:
			s.p.record(ps.a, func(a *Attempt) { a.Client, a.Ended = "CONN_RESET", time.Now() })
			ps.clientDone = true
			s.resetClient = true
			s.closeClientLocked("reset by rule")
		case Late:
			ps.delay = time.AfterFunc(ps.rule.spec.Delay, func() { s.sendLate(ps) })
			return // kept until the held answer is sent or the client gives up
		}
	}
	s.forgetLocked(ps)
}

// creditLocked gives pr back n bytes of window on the connection and
// on its stream id.
func (s *session) creditLocked(pr *peer, id, n uint32) {
	s.enqueueLocked(pr, func() error {
		if err := pr.fr.WriteWindowUpdate(0, n); err != nil {
			return err
		}
		return pr.fr.WriteWindowUpdate(id, n)
	})
}

// resetClientLocked resets the client's stream with code.
func (s *session) resetClientLocked(ps *pstream, code http2.ErrCode) {
	id := ps.cid
	s.enqueueLocked(s.cl, func() error { return s.cl.fr.WriteRSTStream(id, code) })
	s.clientEndedLocked(ps, "RST_"+code.String())
}

// reset relays an RST_STREAM from pr to the other side.
func (s *session) reset(pr *peer, f *http2.RSTStreamFrame) {
	ps := s.streamOf(pr, f.StreamID)
	if ps == nil {
		return
	}
	if pr == s.cl {
		s.p.record(ps.a, func(a *Attempt) { a.ClientReset = f.ErrCode.String() })
		ps.clientDone = true
		s.p.record(ps.a, func(a *Attempt) { a.Ended = time.Now() })
		if ps.forwarded && !ps.upDone {
			uid, code := ps.uid, f.ErrCode
			s.enqueueLocked(s.up, func() error { return s.up.fr.WriteRSTStream(uid, code) })
			ps.upDone = true
			ps.upEndedLocked()
		}
		s.forgetLocked(ps)
		return
	}
	if ps.upDone {
		// After its whole answer (a server may reset a stream whose
		// request it did not read to the end, NO_ERROR): the answer
		// stands, and what waits for the client still goes.
		return
	}
	s.upstreamEndedLocked(ps, "RST_"+f.ErrCode.String())
	if !ps.holding && !ps.clientDone {
		s.resetClientLocked(ps, f.ErrCode)
	}
}

// resetLocked resets pr's stream id for a malformed frame on it.
func (s *session) resetLocked(pr *peer, id uint32, code http2.ErrCode) {
	s.enqueueLocked(pr, func() error { return pr.fr.WriteRSTStream(id, code) })
	if s.streamOf(pr, id) != nil {
		// As if pr had reset it: the other side hears of it.
		s.reset(pr, &http2.RSTStreamFrame{FrameHeader: http2.FrameHeader{StreamID: id}, ErrCode: code})
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// codeName is a grpc-status's name (cut.Code's, which has them all),
// NO_STATUS for none.
func codeName(code int) string {
	if code < 0 {
		return "NO_STATUS"
	}
	return cut.Code(code).String()
}
