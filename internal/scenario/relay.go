package scenario

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// A relay sits, in this process, between a scenario's client and its
// rpcserver, to make the server look as it does to a client in cases the
// rpcserver has no switch for: a server that stops reading and then
// resumes (stallRelay), and a DEADLINE_EXCEEDED answer that reaches the
// client before its attempt times out (answerRelay). What executes is
// still decided, and counted, by the real server behind it.

// relayBase accepts connections for a relay and closes everything the
// relay opened when the scenario ends.
type relayBase struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex // guards conns and closed
	conns  []net.Conn
	closed bool
}

// listenRelay listens for a relay to target; the relay calls start once
// it is ready to serve connections.
func (t *T) listenRelay(target string) *relayBase {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("relay: %v", err)
	}
	r := &relayBase{ln: ln, target: target}
	t.Cleanup(r.close)
	return r
}

// start accepts connections until the relay is closed and hands each to
// serve, on a goroutine of its own.
func (r *relayBase) start(serve func(client net.Conn)) {
	r.wg.Go(func() {
		for {
			nc, err := r.ln.Accept()
			if err != nil {
				return
			}
			r.track(nc)
			r.wg.Go(func() { serve(nc) })
		}
	})
}

// Addr is the address clients connect to.
func (r *relayBase) Addr() string { return r.ln.Addr().String() }

// dial connects to the target; the connection is closed with the relay.
func (r *relayBase) dial() (net.Conn, error) {
	up, err := net.DialTimeout("tcp", r.target, IOTimeout)
	if err != nil {
		return nil, err
	}
	r.track(up)
	return up, nil
}

// track records nc to be closed with the relay; once the relay is
// closed it closes nc at once.
func (r *relayBase) track(nc net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		nc.Close()
		return
	}
	r.conns = append(r.conns, nc)
}

func (r *relayBase) close() {
	r.ln.Close()
	r.mu.Lock()
	r.closed = true
	for _, nc := range r.conns {
		nc.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// pipe copies bytes both ways between a and b until either side ends,
// then closes both.
func pipe(a, b net.Conn) {
	var once sync.Once
	stop := func() { once.Do(func() { a.Close(); b.Close() }) }
	var wg sync.WaitGroup
	wg.Go(func() { io.Copy(a, b); stop() })
	wg.Go(func() { io.Copy(b, a); stop() })
	wg.Wait()
}

// stallRelay relays connections to the server unchanged, except the first
// one, which it does not read at all until resume: to the client, a server
// that stopped reading. Its later connections, the client's retries, are
// served at once.
type stallRelay struct {
	*relayBase
	stalled chan net.Conn // receives the first connection
}

// StartStallRelay starts a stallRelay in front of target, closed when the
// scenario ends.
func (t *T) StartStallRelay(target string) *stallRelay {
	r := &stallRelay{relayBase: t.listenRelay(target), stalled: make(chan net.Conn, 1)}
	var first sync.Once
	r.start(func(nc net.Conn) {
		isFirst := false
		first.Do(func() { isFirst = true })
		if isFirst {
			r.stalled <- nc
			return
		}
		up, err := r.dial()
		if err != nil {
			nc.Close()
			return
		}
		pipe(nc, up)
	})
	return r
}

// Resume reads the stalled connection as the server would have once it
// resumed reading: everything the client had written before it gave up,
// up to the client's close, is passed to a new server connection. It
// returns once the server has read all of it and closed that connection,
// with the number of bytes passed on.
func (r *stallRelay) Resume() (int64, error) {
	var nc net.Conn
	select {
	case nc = <-r.stalled:
	default:
		return 0, errors.New("relay: the client never connected")
	}
	up, err := r.dial()
	if err != nil {
		return 0, err
	}
	nc.SetReadDeadline(time.Now().Add(IOTimeout))
	up.SetDeadline(time.Now().Add(IOTimeout))
	n, err := io.Copy(up, nc)
	if err != nil {
		return n, err
	}
	if err := up.(*net.TCPConn).CloseWrite(); err != nil {
		return n, err
	}
	// The server reads to the end of the stream, then closes; its
	// answers go nowhere, as the client that asked is gone.
	_, err = io.Copy(io.Discard, up)
	if IsReset(err) {
		err = nil
	}
	return n, err
}

// answerRelay relays connections to the server, but answers itself, with
// the status and text answer returns, each request for which answer
// reports true; those requests never reach the server.
type answerRelay struct {
	*relayBase
	answer   func(f *proto.Frame) (proto.Status, string, bool)
	answered atomic.Int64
}

// StartAnswerRelay starts an answerRelay in front of target, answering
// with answer, closed when the scenario ends.
func (t *T) StartAnswerRelay(target string, answer func(f *proto.Frame) (proto.Status, string, bool)) *answerRelay {
	r := &answerRelay{relayBase: t.listenRelay(target), answer: answer}
	r.start(r.serve)
	return r
}

// Answered returns how many requests the relay answered itself.
func (r *answerRelay) Answered() int { return int(r.answered.Load()) }

func (r *answerRelay) serve(nc net.Conn) {
	up, err := r.dial()
	if err != nil {
		nc.Close()
		return
	}
	var wg sync.WaitGroup
	defer func() {
		nc.Close()
		up.Close()
		wg.Wait()
	}()
	// Answers from the server and from the relay go to the client whole
	// frames at a time, under wmu.
	var wmu sync.Mutex
	toClient := func(f *proto.Frame) error {
		b, err := proto.AppendFrame(nil, f)
		if err != nil {
			return err
		}
		wmu.Lock()
		defer wmu.Unlock()
		_, err = nc.Write(b)
		return err
	}
	wg.Go(func() {
		defer nc.Close()
		fr := proto.NewFrameReader(up, proto.TypeResponse, 0)
		for {
			f, err := fr.ReadFrame()
			if err != nil || toClient(&f) != nil {
				return
			}
		}
	})
	fr := proto.NewFrameReader(nc, proto.TypeRequest, 0)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		if st, text, ok := r.answer(&f); ok {
			r.answered.Add(1)
			resp := proto.Frame{Type: proto.TypeResponse, ID: f.ID, Status: st, Method: f.Method, Payload: []byte(text)}
			if toClient(&resp) != nil {
				return
			}
			continue
		}
		b, err := proto.AppendFrame(nil, &f)
		if err != nil {
			return
		}
		if _, err := up.Write(b); err != nil {
			return
		}
	}
}
