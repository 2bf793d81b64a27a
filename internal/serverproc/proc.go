// Package serverproc starts server processes that announce their address
// on stdout, rpcserver above all, and stops them so that none outlives the
// program that started it.
package serverproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/proc"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// StopGrace is how long a process has to exit after SIGINT before it is
// killed.
const StopGrace = 3 * time.Second

// StartTimeout bounds how long a process may take to announce itself,
// after any start delay it was asked for.
const StartTimeout = 10 * time.Second

// Spec says how to start one process.
type Spec struct {
	Bin  string
	Args []string
	// Announce turns the first stdout line into the address the process
	// listens on, or says why the line is not an announcement.
	Announce func(line string) (string, error)
	// Stderr receives the process's stderr; nil discards it. Its last
	// lines are also kept, to explain an exit before the announcement.
	Stderr io.Writer
	// Want says what Bin is meant to be, with its article, such as "an
	// rpcserver": a process that exits before announcing itself and says
	// nothing on stderr is asked whether it is one. Empty asks nothing.
	Want string
}

// Proc is a running process.
type Proc struct {
	PID int
	// Addr is the announced address; empty until Await returns nil.
	Addr string

	spec   Spec
	cancel context.CancelFunc
	child  *proc.Proc
	first  chan string // the first stdout line; closed without one at EOF
}

// Start starts the process without waiting for its announcement. It is
// started under a context of its own: Stop, or ctx ending, sends SIGINT,
// then SIGKILL after StopGrace. SIGINT, not SIGTERM: rpcserver closes at
// once on SIGINT, where SIGTERM drains it, which a scenario asks for
// with Terminate. On Linux the kernel also kills it if this
// process dies.
func Start(ctx context.Context, spec Spec) (*Proc, error) {
	ctx, cancel := context.WithCancel(ctx)
	child, err := proc.Start(ctx, proc.Spec{
		Bin: spec.Bin, Args: spec.Args, StdoutPipe: true, Stderr: spec.Stderr,
		Interrupt: syscall.SIGINT, WaitDelay: StopGrace,
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("serverproc: start %s: %w", spec.Bin, err)
	}
	p := &Proc{PID: child.PID, spec: spec, cancel: cancel, child: child, first: make(chan string, 1)}
	go func() {
		defer child.Stdout.Close()
		sc := bufio.NewScanner(child.Stdout)
		if sc.Scan() {
			p.first <- sc.Text()
		}
		close(p.first)
		io.Copy(io.Discard, child.Stdout)
	}()
	return p, nil
}

// Await waits up to timeout for the announcement and records the address.
func (p *Proc) Await(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line, ok := <-p.first:
		if !ok {
			return p.earlyExit()
		}
		addr, err := p.spec.Announce(line)
		if err != nil {
			return err
		}
		p.Addr = addr
		return nil
	case <-t.C:
		return fmt.Errorf("serverproc: %s did not announce within %v", p.spec.Bin, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// earlyExit is Await's error for a process that exited without
// announcing its address: how it ended, and what it said on stderr or,
// if nothing, what it was meant to be. It waits for the exit.
func (p *Proc) earlyExit() error {
	exit := p.child.Exit()
	msg := fmt.Sprintf("serverproc: %s %s before announcing its address", p.spec.Bin, exit)
	if last := p.child.Stderr(stderrLines); last != "" {
		msg += fmt.Sprintf("; its stderr ended: %q", last)
	} else if p.spec.Want != "" {
		msg += fmt.Sprintf(" (is %s %s?)", p.spec.Bin, p.spec.Want)
	}
	return &exitError{msg: msg, err: exit.Err}
}

// exitError is an error about a process that exited: it wraps ErrExited
// and Wait's error, if any.
type exitError struct {
	msg string
	err error
}

func (e *exitError) Error() string { return e.msg }

func (e *exitError) Unwrap() []error {
	if e.err == nil {
		return []error{ErrExited}
	}
	return []error{ErrExited, e.err}
}

// StartAwait starts the process and waits for its announcement; on any
// failure the process is stopped.
func StartAwait(ctx context.Context, spec Spec, timeout time.Duration) (*Proc, error) {
	p, err := Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := p.Await(ctx, timeout); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// ErrExited is wrapped by Alive's error, and by Await's when the process
// exited before announcing its address.
var ErrExited = errors.New("serverproc: process exited")

// Alive returns an error wrapping ErrExited if the process has exited.
func (p *Proc) Alive() error {
	select {
	case <-p.child.Exited():
		return fmt.Errorf("%w: %s (pid %d): %v", ErrExited, p.spec.Bin, p.PID, p.child.Err())
	default:
		return nil
	}
}

// Exited is closed once the process has exited and been reaped.
func (p *Proc) Exited() <-chan struct{} { return p.child.Exited() }

// ExitErr is the process's exit status as Wait reported it; nil for a
// clean exit. Call it after Exited is closed.
func (p *Proc) ExitErr() error { return p.child.Err() }

// Kill sends SIGKILL, as a crash would, and returns once the process is
// gone and reaped. A process that already exited is not an error.
func (p *Proc) Kill() error {
	if err := p.child.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("serverproc: %w", err)
	}
	<-p.child.Exited()
	return nil
}

// Terminate sends SIGTERM, which drains an rpcserver (SPEC.md, "Drain"),
// and returns at once; Exited says when the process is gone. A process
// that already exited is not an error.
func (p *Proc) Terminate() error {
	if err := p.child.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("serverproc: %w", err)
	}
	return nil
}

// Stop ends the process, SIGINT then SIGKILL after StopGrace, and
// returns once it is gone. It may be called more than once.
func (p *Proc) Stop() {
	p.cancel()
	<-p.child.Exited()
}

// RPCServer are the rpcserver flags a caller sets. Zero values leave the
// server's defaults.
type RPCServer struct {
	Bin string
	// Addr is the address to bind; empty means 127.0.0.1:0.
	Addr         string
	LogPath      string
	Workers      int
	QueueSize    int
	MaxOutBytes  int
	WriteTimeout time.Duration
	Chunk        bool
	Faults       []string
	StartDelay   time.Duration
	// NoExecLog turns off the EXEC event per executed request, for
	// measurements where logging every request would be the bottleneck.
	NoExecLog bool
	// Store is the -store spec; empty is the server's in-memory store.
	Store string
	// DedupTTL and DedupLease tune a SQL store's idempotency records.
	DedupTTL, DedupLease time.Duration
	// Crash is a serverapi.Crash* point.
	Crash string
	// DrainTimeout is -drain-timeout when positive: how long a drain
	// (Terminate, ctl.drain, a drain fault) may take.
	DrainTimeout time.Duration
	// GRPC starts rpcserver in its gRPC mode (-grpc): the same address
	// serves the Bank gRPC service too (internal/grpcwire/SPEC.md), with
	// GRPCFaults as -grpc-fault rules.
	GRPC       bool
	GRPCFaults []string
	Stderr     io.Writer
	// Exec, when set, runs rpcserver through another program: it is
	// given rpcserver's path and arguments and returns what to start
	// instead, such as nethost.Host.Exec to run it inside a test host.
	// The program must end by executing rpcserver in its own place, so
	// that the process started is rpcserver, signals and all.
	Exec func(bin string, args ...string) (string, []string)
}

// Spec returns how to start rpcserver with these settings.
func (o RPCServer) Spec() Spec {
	flag := func(name, v string) []string { return []string{"-" + name, v} }
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	args := flag(serverapi.FlagAddr, addr)
	if o.LogPath != "" {
		args = append(args, flag(serverapi.FlagLog, o.LogPath)...)
	}
	if o.Workers > 0 {
		args = append(args, flag(serverapi.FlagWorkers, strconv.Itoa(o.Workers))...)
	}
	if o.QueueSize > 0 {
		args = append(args, flag(serverapi.FlagQueue, strconv.Itoa(o.QueueSize))...)
	}
	if o.MaxOutBytes > 0 {
		args = append(args, flag(serverapi.FlagMaxOutBytes, strconv.Itoa(o.MaxOutBytes))...)
	}
	if o.WriteTimeout > 0 {
		args = append(args, flag(serverapi.FlagWriteTimeout, o.WriteTimeout.String())...)
	}
	if o.Chunk {
		args = append(args, "-"+serverapi.FlagChunk)
	}
	if o.StartDelay > 0 {
		args = append(args, flag(serverapi.FlagStartDelay, o.StartDelay.String())...)
	}
	if o.NoExecLog {
		args = append(args, "-"+serverapi.FlagLogExec+"=false")
	}
	for _, f := range o.Faults {
		args = append(args, flag(serverapi.FlagFault, f)...)
	}
	if o.Store != "" {
		args = append(args, flag(serverapi.FlagStore, o.Store)...)
	}
	if o.DedupTTL > 0 {
		args = append(args, flag(serverapi.FlagDedupTTL, o.DedupTTL.String())...)
	}
	if o.DedupLease > 0 {
		args = append(args, flag(serverapi.FlagDedupLease, o.DedupLease.String())...)
	}
	if o.Crash != "" {
		args = append(args, flag(serverapi.FlagCrash, o.Crash)...)
	}
	if o.DrainTimeout > 0 {
		args = append(args, flag(serverapi.FlagDrainTimeout, o.DrainTimeout.String())...)
	}
	if o.GRPC {
		args = append(args, "-"+serverapi.FlagGRPC)
	}
	for _, f := range o.GRPCFaults {
		args = append(args, flag(serverapi.FlagGRPCFault, f)...)
	}
	bin := o.Bin
	if o.Exec != nil {
		bin, args = o.Exec(bin, args...)
	}
	return Spec{Bin: bin, Args: args, Announce: serverapi.ParseAnnounce, Stderr: o.Stderr, Want: "an rpcserver"}
}

// stderrLines is how many of its last stderr lines an early exit quotes:
// enough for rpcserver's usage error and the line that follows it.
const stderrLines = 5
