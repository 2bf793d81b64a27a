package cut

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/proc"
)

// Spec says how to start one adapter.
type Spec struct {
	Bin  string
	Args []string
	// Env, when not nil, is the adapter's whole environment, as
	// exec.Cmd.Env; nil passes on this process's.
	Env []string
	// Scenario is sent in init, for the adapter's logs.
	Scenario string
	// Stderr receives the adapter's stderr as it comes; nil discards
	// it. Its end is also kept, to quote in errors.
	Stderr io.Writer
	Config Config
}

// phase is where a session is in the protocol's lifecycle.
type phase int

const (
	phaseInit     phase = iota // init sent, no init_ok yet
	phaseCalls                 // init_ok received; calls may go
	phaseShutdown              // shutdown sent
	phaseDone                  // shutdown_ok received
)

// answer is what a waiting Do gets: a result, or an error (a *CallError
// from the adapter, or the session's end).
type answer struct {
	r   Result
	err error
}

// call is a call sent and not yet answered.
type call struct {
	ch   chan answer // has room for one answer
	sent time.Time   // when its line began to be written; set under Adapter.mu before the write
}

// Adapter is a running adapter process and its session. Its methods may
// be called concurrently.
type Adapter struct {
	bin    string
	cfg    Config
	child  *proc.Proc
	stdin  *os.File
	stdout *os.File

	writeMu sync.Mutex // guards writes to stdin, so that lines never interleave

	mu       sync.Mutex // guards the fields below
	name     string     // bin, then with stack and version once known
	info     Info
	phase    phase
	nextID   int64
	pending  map[int64]*call    // calls sent and not answered
	answered map[int64]bool     // calls answered, to tell a duplicate from an unknown id
	channels map[string]Channel // each channel id's configuration, as first sent
	err      error              // why the session ended; nil while it lasts

	initOK     chan struct{} // closed when init_ok arrives
	shutdownOK chan struct{} // closed when shutdown_ok arrives
	broken     chan struct{} // closed when err is set
	readDone   chan struct{} // closed when the stdout reader has returned

	closeOnce sync.Once
	closeErr  error
}

// Start starts the adapter and completes the init handshake within
// Config.InitTimeout. ctx bounds only the start; the process lives until
// Close. On any failure the process is stopped and the error is an
// *Error, or ctx's.
func Start(ctx context.Context, spec Spec) (*Adapter, error) {
	cfg, err := spec.Config.withDefaults()
	if err != nil {
		return nil, err
	}
	// The adapter lives until Close, whatever becomes of ctx. Once it
	// has exited, its stderr has ExitGrace to come to its end.
	child, err := proc.Start(context.Background(), proc.Spec{
		Bin: spec.Bin, Args: spec.Args, Env: spec.Env,
		StdinPipe: true, StdoutPipe: true, Stderr: spec.Stderr,
		Group: true, WaitDelay: cfg.ExitGrace,
	})
	if err != nil {
		return nil, fmt.Errorf("cut: start %s: %w", spec.Bin, err)
	}
	a := &Adapter{
		bin: spec.Bin, name: spec.Bin, cfg: cfg, child: child,
		stdin: child.Stdin, stdout: child.Stdout,
		pending: map[int64]*call{}, answered: map[int64]bool{}, channels: map[string]Channel{},
		initOK: make(chan struct{}), shutdownOK: make(chan struct{}), broken: make(chan struct{}),
		readDone: make(chan struct{}),
	}
	go a.read()

	line, _ := json.Marshal(wireInit{Type: typeInit, Protocol: Protocol, Scenario: spec.Scenario})
	a.write(line, cfg.InitTimeout, nil) // an adapter that cannot take it is judged by what follows
	t := time.NewTimer(cfg.InitTimeout)
	defer t.Stop()
	select {
	case <-a.initOK:
		return a, nil
	case <-a.broken:
	case <-t.C:
		a.fail(a.errorf(NoInit, 0, "no init_ok within %v", cfg.InitTimeout))
	case <-ctx.Done():
		a.fail(ctx.Err())
	}
	a.Close()
	return nil, a.sessionErr()
}

// Info returns what the adapter said about itself in init_ok.
func (a *Adapter) Info() Info {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.info
}

// PID is the adapter's process id, which is also its process group's.
func (a *Adapter) PID() int { return a.child.PID }

// Do sends c and waits for its answer: a Result whatever status the
// library returned, or a *CallError when the adapter did not invoke the
// call. An adapter that breaks the protocol, on this call or another,
// gives an *Error, and so does every Do after it. ctx ending abandons the
// wait (the adapter's answer, when it comes, is dropped) but not the
// call, which the adapter may already have made.
func (a *Adapter) Do(ctx context.Context, c Call) (Result, error) {
	a.mu.Lock()
	if a.err != nil || a.phase != phaseCalls {
		defer a.mu.Unlock()
		if a.err != nil {
			return Result{}, a.err
		}
		return Result{}, ErrClosed
	}
	if prev, ok := a.channels[c.Channel.ID]; ok && !sameChannel(prev, c.Channel) {
		a.mu.Unlock()
		return Result{}, fmt.Errorf("cut: channel %q was first configured otherwise", c.Channel.ID)
	}
	id := a.nextID + 1
	line, err := encodeCall(id, c)
	if err != nil {
		a.mu.Unlock()
		return Result{}, err
	}
	a.nextID = id
	a.channels[c.Channel.ID] = c.Channel
	// Registered before the write: the answer may come before Write
	// returns.
	pc := &call{ch: make(chan answer, 1)}
	a.pending[id] = pc
	a.mu.Unlock()
	ch := pc.ch

	bound := time.Duration(ceilMS(c.Deadline))*time.Millisecond + a.cfg.CallGrace
	sending := func() {
		now := time.Now()
		a.mu.Lock()
		pc.sent = now
		a.mu.Unlock()
	}
	if err := a.write(line, bound, sending); errors.Is(err, os.ErrDeadlineExceeded) {
		a.fail(a.errorf(Hung, id, "did not read call %d within %v", id, bound))
	}
	// Any other write error means the adapter closed its stdin or
	// exited: the reader then fails the call, or the bound below does.
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case ans := <-ch:
		return ans.r, ans.err
	case <-t.C:
		a.fail(a.errorf(Hung, id, "no answer to call %d within %v (its deadline, %v, and %v)", id, bound, c.Deadline, a.cfg.CallGrace))
		// Exactly one of fail and the reader answered ch.
		ans := <-ch
		return ans.r, ans.err
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Close ends the session: shutdown, then stdin closed, then SIGTERM and
// SIGKILL to the adapter's process group if it has not exited. It
// returns once the adapter and everything left in its group are gone,
// with nil if the session ended cleanly and otherwise its first error,
// which Do may already have returned. It may be called more than once.
func (a *Adapter) Close() error {
	a.closeOnce.Do(func() { a.closeErr = a.close() })
	return a.closeErr
}

func (a *Adapter) close() error {
	a.mu.Lock()
	polite := a.err == nil && a.phase == phaseCalls
	if polite {
		a.phase = phaseShutdown
	}
	a.mu.Unlock()
	if polite {
		line, _ := json.Marshal(wireShutdown{Type: typeShutdown})
		a.write(line, a.cfg.ShutdownTimeout, nil)
		t := time.NewTimer(a.cfg.ShutdownTimeout)
		select {
		case <-a.shutdownOK:
		case <-a.broken:
		case <-t.C:
			a.fail(a.errorf(IgnoredShutdown, 0, "no shutdown_ok within %v", a.cfg.ShutdownTimeout))
		}
		t.Stop()
	}
	a.writeMu.Lock()
	a.stdin.Close()
	a.writeMu.Unlock()
	if !a.awaitExit(a.cfg.ExitGrace) {
		a.fail(a.errorf(IgnoredShutdown, 0, "still running %v after its stdin closed", a.cfg.ExitGrace))
		a.child.SignalGroup(syscall.SIGTERM)
		if !a.awaitExit(a.cfg.KillGrace) {
			a.child.SignalGroup(syscall.SIGKILL)
			<-a.child.Exited()
		}
	}
	// The group is dead, so its stdout ends, unless something left the
	// group holding it: then it is closed under the reader. (Its stderr
	// is cut off likewise, by the WaitDelay Start set.)
	t := time.NewTimer(a.cfg.ExitGrace)
	defer t.Stop()
	select {
	case <-a.readDone:
	case <-t.C:
		a.stdout.Close()
	}
	<-a.readDone
	<-a.child.Exited()
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.err.(*Error); ok {
		// stderr and stdout are separate pipes: the lines that explain
		// a misbehaviour may have come after it. Now all of it is in.
		final := *e
		final.Stderr = a.child.Stderr(stderrLines)
		a.err = &final
	}
	if a.err != ErrClosed {
		return a.err
	}
	return nil
}

func (a *Adapter) awaitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-a.child.Exited():
		return true
	case <-t.C:
		return false
	}
}

// write writes line and a newline to the adapter's stdin within bound.
// sending, when not nil, runs just before the write, once no other line
// is being written.
func (a *Adapter) write(line []byte, bound time.Duration, sending func()) error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	if err := a.stdin.SetWriteDeadline(time.Now().Add(bound)); err != nil {
		return err
	}
	if sending != nil {
		sending()
	}
	_, err := a.stdin.Write(append(line, '\n'))
	return err
}

// fail ends the session with err unless it has already ended: every
// waiting call gets err, and so does every later one.
func (a *Adapter) fail(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return
	}
	a.err = err
	close(a.broken)
	for id, c := range a.pending {
		c.ch <- answer{err: err}
		delete(a.pending, id)
	}
}

func (a *Adapter) sessionErr() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// errorf returns an *Error about the adapter, quoting its stderr so far.
func (a *Adapter) errorf(k Kind, id int64, format string, args ...any) *Error {
	a.mu.Lock()
	name := a.name
	a.mu.Unlock()
	return &Error{Adapter: name, Kind: k, CallID: id, Detail: fmt.Sprintf(format, args...), Stderr: a.child.Stderr(stderrLines)}
}

// read reads the adapter's stdout to its end, then waits for the process
// and ends the session according to how it exited.
func (a *Adapter) read() {
	defer close(a.readDone)
	defer a.stdout.Close()
	sc := bufio.NewScanner(a.stdout)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine+1)
	for sc.Scan() {
		// When the line was read, by the harness's clock: no later than
		// the adapter wrote it, and a little after it did.
		at := time.Now()
		if a.sessionErr() != nil {
			continue // the session is over; drain, so the adapter is not blocked writing
		}
		if err := a.handle(sc.Bytes(), at); err != nil {
			a.fail(err)
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		a.fail(a.errorf(LineTooLong, 0, "wrote a line longer than %d bytes", MaxLine))
		io.Copy(io.Discard, a.stdout)
	}
	// Exited waits for the adapter's last words on stderr too, which
	// explain its exit.
	<-a.child.Exited()
	a.ended()
}

// ended ends the session once the adapter has exited and its stdout is
// read.
func (a *Adapter) ended() {
	a.mu.Lock()
	n, ph := len(a.pending), a.phase
	a.mu.Unlock()
	exit := a.child.Exit()
	how := exit.String()
	switch {
	case ph == phaseInit:
		a.fail(a.errorf(NoInit, 0, "%s before answering init", how))
	case n > 0:
		a.fail(a.errorf(Exited, 0, "%s with %d calls unanswered", how, n))
	case ph == phaseDone && exit.Err == nil:
		a.fail(ErrClosed)
	case ph == phaseDone:
		a.fail(a.errorf(Exited, 0, "%s after shutdown_ok", how))
	case ph == phaseShutdown:
		a.fail(a.errorf(Exited, 0, "%s before shutdown_ok", how))
	default:
		a.fail(a.errorf(Exited, 0, "%s before shutdown", how))
	}
}

// handle acts on one line from the adapter, read at at; an error ends
// the session.
func (a *Adapter) handle(line []byte, at time.Time) error {
	m, err := parseLine(line)
	if err != nil {
		return a.errorf(BadOutput, 0, "wrote %.200q: %v", line, err)
	}
	a.mu.Lock()
	ph := a.phase
	a.mu.Unlock()
	if ph == phaseInit && m.typ != typeInitOK && m.typ != typeFatal {
		return a.errorf(BadOutput, 0, "wrote %s before init_ok", m.typ)
	}
	switch m.typ {
	case typeInitOK:
		if ph != phaseInit {
			return a.errorf(BadOutput, 0, "wrote a second init_ok")
		}
		info, proto, err := decodeInitOK(m)
		if err != nil {
			return a.errorf(WrongProtocol, 0, "%v", err)
		}
		if proto != Protocol {
			return a.errorf(WrongProtocol, 0, "speaks %q, want %q", proto, Protocol)
		}
		a.mu.Lock()
		a.info, a.phase = info, phaseCalls
		a.name = fmt.Sprintf("%s (%s %s)", a.bin, info.Stack, info.Version)
		a.mu.Unlock()
		close(a.initOK)
		return nil
	case typeResult:
		r, err := decodeResult(m)
		if err != nil {
			return a.errorf(BadOutput, 0, "%v", err)
		}
		return a.deliver(r.ID, answer{r: r}, at)
	case typeCallError:
		ce, err := decodeCallError(m)
		if err != nil {
			return a.errorf(BadOutput, 0, "%v", err)
		}
		return a.deliver(ce.ID, answer{err: ce}, at)
	case typeShutdownOK:
		if err := m.decode(&wireEmpty{}); err != nil {
			return a.errorf(BadOutput, 0, "%v", err)
		}
		if ph != phaseShutdown {
			return a.errorf(BadOutput, 0, "wrote shutdown_ok unasked")
		}
		a.mu.Lock()
		a.phase = phaseDone
		a.mu.Unlock()
		close(a.shutdownOK)
		return nil
	case typeFatal:
		var f wireFatal
		if err := m.decode(&f); err != nil {
			return a.errorf(BadOutput, 0, "%v", err)
		}
		return a.errorf(Fatal, 0, "wrote fatal: %s", f.Text)
	}
	return a.errorf(BadOutput, 0, "wrote a message of unknown type %q", m.typ)
}

// deliver hands ans, read at at, to the call id's waiter, with the
// harness's measure of a result's time.
func (a *Adapter) deliver(id int64, ans answer, at time.Time) error {
	a.mu.Lock()
	c, ok := a.pending[id]
	var sent time.Time // c.sent, read under a.mu as it is written
	if ok {
		delete(a.pending, id)
		a.answered[id] = true
		sent = c.sent
		ans.r.Sent, ans.r.Elapsed = sent, at.Sub(sent)
	}
	dup := a.answered[id]
	a.mu.Unlock()
	switch {
	case ok && sent.IsZero():
		// No longer pending, so the session's end will not answer it:
		// it gets the error here, which then ends the session.
		err := a.errorf(UnknownID, id, "answered call %d before it was sent", id)
		c.ch <- answer{err: err}
		return err
	case ok && ans.err == nil && ans.r.Claimed > ans.r.Elapsed+ClaimSlack:
		err := a.errorf(ImpossibleElapsed, id, "claimed elapsed_ms %.3f for call %d, longer than the %.3fms the harness measured from sending the call to reading its result (slack %v)",
			ms(ans.r.Claimed), id, ms(ans.r.Elapsed), ClaimSlack)
		c.ch <- answer{err: err}
		return err
	case ok:
		c.ch <- ans
		return nil
	case dup:
		return a.errorf(DuplicateID, id, "answered call %d a second time", id)
	}
	return a.errorf(UnknownID, id, "answered call %d, which was never sent", id)
}

// ms is d in milliseconds, with fractions.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
