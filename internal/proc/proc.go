// Package proc runs child processes that cannot outlive the program that
// started them.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/tail"
)

// Spec says how to start one child.
type Spec struct {
	Bin  string
	Args []string
	// Env, when not nil, is the child's whole environment, as
	// exec.Cmd.Env; nil passes on this process's.
	Env []string
	// Dir is the child's working directory; empty is this process's.
	Dir string
	// StdinPipe and StdoutPipe give the child a pipe for stdin or
	// stdout, whose other end is Proc.Stdin or Proc.Stdout. Without
	// them the child's stdin is the null device and its stdout Stdout.
	StdinPipe, StdoutPipe bool
	// Stdout receives the child's stdout when StdoutPipe is false; nil
	// discards it.
	Stdout io.Writer
	// Stderr receives the child's stderr, through a copy that also
	// keeps its end for Proc.Stderr; nil discards it. A failing Stderr
	// never stops the copy: the child must not block on a full pipe. A
	// Stderr equal to Stdout gets both, in order, as CombinedOutput.
	Stderr io.Writer
	// Direct hands Stdout and Stderr, *os.File or nil, to the child
	// itself instead of copying them, and keeps no end of its stderr:
	// for a child whose own children hold them open past its exit
	// (postgres's backends), which a copy would wait for.
	Direct bool
	// Interrupt is the signal the child gets when the context given to
	// Start ends; nil is SIGKILL.
	Interrupt os.Signal
	// WaitDelay is how long after the context ends, and after the child
	// exits, the child and the copy of its output have before the child
	// is killed and its pipes closed, as exec.Cmd.WaitDelay; zero waits
	// without bound.
	WaitDelay time.Duration
	// Group puts the child in a process group of its own, out of reach
	// of a Ctrl-C meant for this process: what is left of the group is
	// killed as soon as the child exits, and SignalGroup reaches all of
	// it.
	Group bool
	// DeathSignal is the signal the kernel sends the child when the
	// thread that started it dies, on Linux; zero is SIGKILL. Elsewhere
	// nothing is sent.
	DeathSignal syscall.Signal
	// User, when not nil, is who the child runs as, which takes the
	// privilege to switch users; on Linux only, elsewhere Start refuses
	// it with an error wrapping errors.ErrUnsupported.
	User *User
}

// User is an account a child runs as.
type User struct {
	Name     string // for messages
	UID, GID uint32
}

// Proc is a running child. Its methods may be called concurrently.
type Proc struct {
	PID int
	// Stdin is the write end of the child's stdin with Spec.StdinPipe,
	// Stdout the read end of its stdout with Spec.StdoutPipe; nil
	// otherwise. The caller closes them.
	Stdin, Stdout *os.File

	cmd    *exec.Cmd
	group  bool
	byUs   atomic.Bool   // a signal went to the child from here
	exited chan struct{} // closed once the child is reaped and its stderr copied
	err    error         // Wait's error; read after exited is closed
	stderr tail.Buffer
}

// Start starts the child under ctx: when ctx ends the child gets
// Spec.Interrupt, then SIGKILL after Spec.WaitDelay. The child is reaped
// by Start's own goroutine; Exited says when.
func Start(ctx context.Context, spec Spec) (*Proc, error) {
	attr, err := sysProcAttr(spec)
	if err != nil {
		return nil, err
	}
	p := &Proc{group: spec.Group, exited: make(chan struct{})}
	cmd := exec.CommandContext(ctx, spec.Bin, spec.Args...)
	cmd.Env, cmd.Dir, cmd.SysProcAttr, cmd.WaitDelay = spec.Env, spec.Dir, attr, spec.WaitDelay
	interrupt := spec.Interrupt
	if interrupt == nil {
		interrupt = os.Kill
	}
	cmd.Cancel = func() error {
		p.byUs.Store(true)
		return cmd.Process.Signal(interrupt)
	}
	p.cmd = cmd
	var childEnds []*os.File // closed here once the child has them
	fail := func(err error) (*Proc, error) {
		closeAll(childEnds)
		closeAll([]*os.File{p.Stdin, p.Stdout})
		return nil, err
	}
	if spec.StdinPipe {
		if cmd.Stdin, p.Stdin, err = pipe(&childEnds, true); err != nil {
			return fail(err)
		}
	}
	cmd.Stdout = spec.Stdout
	if spec.StdoutPipe {
		if p.Stdout, cmd.Stdout, err = pipe(&childEnds, false); err != nil {
			return fail(err)
		}
	}
	cmd.Stderr = spec.Stderr
	if !spec.Direct {
		cmd.Stderr = io.MultiWriter(bestEffort{spec.Stderr}, &p.stderr)
		if !spec.StdoutPipe && same(spec.Stdout, spec.Stderr) {
			cmd.Stdout = cmd.Stderr
		}
	}
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("proc: %w", err))
	}
	closeAll(childEnds)
	p.PID = cmd.Process.Pid
	go func() {
		if p.group {
			p.err = waitGroup(cmd)
		} else {
			p.err = cmd.Wait()
		}
		close(p.exited)
	}()
	return p, nil
}

// pipe returns a new pipe's ends, adding the one the child gets, the
// read end when childReads, to ends.
func pipe(ends *[]*os.File, childReads bool) (r, w *os.File, err error) {
	if r, w, err = os.Pipe(); err != nil {
		return nil, nil, fmt.Errorf("proc: %w", err)
	}
	if childReads {
		*ends = append(*ends, r)
	} else {
		*ends = append(*ends, w)
	}
	return r, w, nil
}

// same reports whether a and b are one writer, as exec.Cmd judges it
// for CombinedOutput: writers that cannot be compared are not.
func same(a, b io.Writer) (eq bool) {
	defer func() { recover() }()
	return a != nil && a == b
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// Exited is closed once the child has exited and been reaped, with what
// is left of its group killed (Spec.Group) and its stderr copied to the
// end or cut off by Spec.WaitDelay.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Err waits for the child to exit and returns Wait's error: nil for a
// clean exit, an *exec.ExitError for any other, or the context's error
// for a child that exited cleanly after Spec.Interrupt.
func (p *Proc) Err() error {
	<-p.exited
	return p.err
}

// Exit waits for the child to exit and says how it ended.
func (p *Proc) Exit() Exit {
	<-p.exited
	e := Exit{Code: -1, ByUs: p.byUs.Load(), Err: p.err}
	if st := p.cmd.ProcessState; st != nil {
		e.Code = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal()
		}
	}
	return e
}

// Signal sends sig to the child; a child that has already exited is not
// an error.
func (p *Proc) Signal(sig syscall.Signal) error {
	p.byUs.Store(true)
	err := p.cmd.Process.Signal(sig)
	if err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("proc: signal %d: %w", p.PID, err)
	}
	return nil
}

// SignalGroup sends sig to the child's whole process group (Spec.Group);
// a group that is gone is not an error.
func (p *Proc) SignalGroup(sig syscall.Signal) error {
	p.byUs.Store(true)
	if err := syscall.Kill(-p.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("proc: signal group %d: %w", p.PID, err)
	}
	return nil
}

// Stderr returns the last n lines of the child's stderr so far, without
// the final newline; at most tail.Max bytes are kept.
func (p *Proc) Stderr(n int) string { return p.stderr.Lines(n) }

// Exit is how a child ended.
type Exit struct {
	// Code is the exit status, -1 when a signal ended the child.
	Code int
	// Signal is the signal that ended the child, or 0.
	Signal syscall.Signal
	// ByUs says a signal went to the child from here: its context ended,
	// or Signal or SignalGroup was called.
	ByUs bool
	// Err is Wait's error.
	Err error
}

// String says how the child ended: "exited with status 3", "was killed
// (signal: killed)".
func (e Exit) String() string { return Ended(e.Err) }

// Ended says how a child whose Wait returned err ended.
func Ended(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exited with status 0"
	case errors.As(err, &ee) && ee.Exited():
		return "exited with status " + strconv.Itoa(ee.ExitCode())
	case errors.As(err, &ee):
		return "was killed (" + ee.ProcessState.String() + ")"
	}
	return fmt.Sprintf("exited (%v)", err)
}

// bestEffort writes to w, if any, and reports success whatever w says: a
// failing destination must not stop the copy of a child's output, or the
// child would block or die on a full pipe.
type bestEffort struct{ w io.Writer }

func (b bestEffort) Write(p []byte) (int, error) {
	if b.w != nil {
		b.w.Write(p)
	}
	return len(p), nil
}
