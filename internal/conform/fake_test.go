package conform

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// fakeBugs are the ways a fake server departs from SPEC.md. The zero
// value is a server that conforms, written independently of
// internal/server and internal/bank.
type fakeBugs struct {
	// fifoIDs stamps each answer with the ID of the oldest request on its
	// connection not yet answered, as a server that assumes answers leave
	// in request order would: a request that finishes early takes an
	// earlier request's ID.
	fifoIDs bool
	// readPastBadFrame skips a frame that does not decode and goes on
	// reading the connection.
	readPastBadFrame bool
	// ignoreKeys executes every request, whatever its key.
	ignoreKeys bool
	// silent never answers a business request; ctl.ping is answered.
	silent bool
}

// fake is a small server of get, debit and ctl.ping. Like rpcserver, it
// executes a request that cannot block (no key, no sleep field) on the
// connection's reader, in arrival order, and any other on a goroutine of
// its own.
type fake struct {
	bugs fakeBugs
	ln   net.Listener
	quit chan struct{} // closed by close: sleeps and waits end
	wg   sync.WaitGroup

	mu       sync.Mutex // guards closed, conns, accounts, keys
	closed   bool
	conns    map[net.Conn]struct{}
	accounts map[string]*fakeAccount
	keys     map[string]*fakeKey
}

type fakeAccount struct{ balance, debits int64 }

// fakeKey is an idempotency key's record; ans is set before done closes.
type fakeKey struct {
	fingerprint string
	done        chan struct{}
	ans         fakeAnswer
}

type fakeAnswer struct {
	status proto.Status
	msg    string   // the payload, unless ok is set
	ok     okAnswer // the payload of an OK answer to get or debit
}

func (a fakeAnswer) payload() string {
	if a.ok.Account != "" {
		return a.ok.String()
	}
	return a.msg
}

func fail(s proto.Status, format string, args ...any) fakeAnswer {
	return fakeAnswer{status: s, msg: fmt.Sprintf(format, args...)}
}

// startFake serves a fake with bugs on a free loopback port until the
// test ends, and returns its address.
func startFake(t *testing.T, bugs fakeBugs) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{bugs: bugs, ln: ln, quit: make(chan struct{}), conns: map[net.Conn]struct{}{},
		accounts: map[string]*fakeAccount{}, keys: map[string]*fakeKey{}}
	f.wg.Go(f.accept)
	t.Cleanup(f.close)
	return ln.Addr().String()
}

// close stops the fake and waits for every goroutine it started.
func (f *fake) close() {
	f.mu.Lock()
	f.closed = true
	for nc := range f.conns {
		nc.Close()
	}
	f.mu.Unlock()
	f.ln.Close()
	close(f.quit)
	f.wg.Wait()
}

func (f *fake) accept() {
	for {
		nc, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			nc.Close()
			return
		}
		f.conns[nc] = struct{}{}
		f.mu.Unlock()
		f.wg.Go(func() { f.serve(nc) })
	}
}

// fakeConn writes a connection's answers.
type fakeConn struct {
	nc   net.Conn
	fifo bool

	mu  sync.Mutex // guards ids and writes to nc
	ids []uint64   // unanswered request IDs in arrival order, when fifo
}

func (c *fakeConn) arrived(id uint64) {
	if c.fifo {
		c.mu.Lock()
		c.ids = append(c.ids, id)
		c.mu.Unlock()
	}
}

func (c *fakeConn) answer(req proto.Frame, a fakeAnswer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := req.ID
	if c.fifo {
		id, c.ids = c.ids[0], c.ids[1:]
	}
	b, err := proto.AppendFrame(nil, &proto.Frame{Type: proto.TypeResponse, ID: id, Status: a.status, Method: req.Method, Payload: []byte(a.payload())})
	if err != nil {
		panic(err) // the fake's own bug
	}
	c.nc.Write(b) // a closed connection loses the answer, as it would anywhere
}

// serve reads one frame at a time: its length prefix, checked at once,
// then its body, decoded by a fresh Decoder.
func (f *fake) serve(nc net.Conn) {
	defer func() {
		f.mu.Lock()
		delete(f.conns, nc)
		f.mu.Unlock()
		nc.Close()
	}()
	c := &fakeConn{nc: nc, fifo: f.bugs.fifoIDs}
	var prefix [4]byte
	for {
		if _, err := io.ReadFull(nc, prefix[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(prefix[:])
		if n < proto.MinFrameLen || n > proto.MaxFrameLen {
			return
		}
		buf := make([]byte, 4+n)
		copy(buf, prefix[:])
		if _, err := io.ReadFull(nc, buf[4:]); err != nil {
			return
		}
		arrived := time.Now()
		var dec proto.Decoder
		frames, err := dec.Feed(buf)
		if err == nil && frames[0].Type != proto.TypeRequest {
			err = errors.New("response frame from client")
		}
		if err != nil {
			if f.bugs.readPastBadFrame {
				continue
			}
			return
		}
		req := frames[0]
		c.arrived(req.ID)
		switch {
		case req.Method == serverapi.MethodPing:
			c.answer(req, fakeAnswer{status: proto.StatusOK})
		case req.Method == serverapi.MethodDrain:
			// Answered, and never done: the fake does not drain.
			c.answer(req, fakeAnswer{status: proto.StatusOK})
		case f.bugs.silent:
		case mayBlock(req):
			f.wg.Go(func() { c.answer(req, f.execute(req, arrived)) })
		default:
			c.answer(req, f.execute(req, arrived))
		}
	}
}

func mayBlock(req proto.Frame) bool {
	if req.Key != "" {
		return true
	}
	fs, err := serverapi.ParseFields(req.Payload)
	_, sleeps := fs["sleep"]
	return err == nil && sleeps
}

func (f *fake) execute(req proto.Frame, arrived time.Time) fakeAnswer {
	budget := time.Duration(req.BudgetMs) * time.Millisecond
	if waited := time.Since(arrived); waited >= budget {
		return fail(proto.StatusDeadlineExceeded, "expired before execution waited=%d", waited.Milliseconds())
	}
	if req.Method != bank.MethodGet && req.Method != bank.MethodDebit {
		return fail(proto.StatusInvalidArgument, "unknown method %q", req.Method)
	}
	fs, err := serverapi.ParseFields(req.Payload)
	if err != nil {
		return fail(proto.StatusInvalidArgument, "%v", err)
	}
	sleep, err := fs.Int("sleep", 0)
	if err != nil {
		return fail(proto.StatusInvalidArgument, "%v", err)
	}
	account := fs["account"]
	if account == "" {
		return fail(proto.StatusInvalidArgument, "account is required")
	}
	var amount int64
	if req.Method == bank.MethodDebit {
		if amount, err = strconv.ParseInt(fs["amount"], 10, 64); err != nil || amount <= 0 {
			return fail(proto.StatusInvalidArgument, "amount must be a positive integer")
		}
	}
	run := func() fakeAnswer {
		select {
		case <-time.After(time.Duration(sleep) * time.Millisecond):
		case <-f.quit:
			return fail(proto.StatusUnavailable, "server closing")
		}
		return f.apply(account, amount, req.BudgetMs)
	}
	if req.Key == "" || f.bugs.ignoreKeys {
		return run()
	}
	return f.keyed(req, arrived.Add(budget), run)
}

// apply executes a get (amount 0) or a debit.
func (f *fake) apply(account string, amount int64, budget uint32) fakeAnswer {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.accounts[account]
	if !ok {
		a = &fakeAccount{balance: bank.DefaultBalance}
		f.accounts[account] = a
	}
	if amount > 0 {
		if amount > a.balance {
			return fail(proto.StatusAppError, "insufficient funds")
		}
		a.balance -= amount
		a.debits++
	}
	return fakeAnswer{status: proto.StatusOK, ok: okAnswer{Account: account, Balance: a.balance, Budget: budget, Exec: a.debits}}
}

// keyed runs the first request with req's key and answers later ones
// from it, waiting for it until deadline.
func (f *fake) keyed(req proto.Frame, deadline time.Time, run func() fakeAnswer) fakeAnswer {
	fp := req.Method + "\x00" + string(req.Payload)
	f.mu.Lock()
	k, ok := f.keys[req.Key]
	if !ok {
		k = &fakeKey{fingerprint: fp, done: make(chan struct{})}
		f.keys[req.Key] = k
	}
	f.mu.Unlock()
	if !ok {
		k.ans = run()
		close(k.done)
		return k.ans
	}
	if k.fingerprint != fp {
		return fail(proto.StatusInvalidArgument, "%s", bank.ErrKeyReused)
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-k.done:
		a := k.ans
		a.ok.Replayed = a.status == proto.StatusOK
		return a
	case <-t.C:
		return fail(proto.StatusDeadlineExceeded, "original request with this key still executing")
	case <-f.quit:
		return fail(proto.StatusUnavailable, "server closing")
	}
}
