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
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// StopGrace is how long a process has to exit after SIGTERM before it is
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
	// Stderr receives the process's stderr; nil discards it.
	Stderr io.Writer
}

// Proc is a running process.
type Proc struct {
	PID int
	// Addr is the announced address; empty until Await returns nil.
	Addr string

	spec   Spec
	cancel context.CancelFunc
	first  chan string   // the first stdout line; closed without one at EOF
	exited chan struct{} // closed when Wait returns
	err    error         // Wait's error; read after exited is closed
}

// Start starts the process without waiting for its announcement. It is
// started under a context of its own: Stop, or ctx ending, sends SIGTERM,
// then SIGKILL after StopGrace. On Linux the kernel also kills it if this
// process dies.
func Start(ctx context.Context, spec Spec) (*Proc, error) {
	if spec.Stderr == nil {
		spec.Stderr = io.Discard
	}
	ctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(ctx, spec.Bin, spec.Args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = StopGrace
	cmd.SysProcAttr = childAttr()
	cmd.Stderr = spec.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("serverproc: %w", err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("serverproc: start %s: %w", spec.Bin, err)
	}
	p := &Proc{PID: cmd.Process.Pid, spec: spec, cancel: cancel, first: make(chan string, 1), exited: make(chan struct{})}
	go func() {
		// Wait only once stdout is drained: Wait closes the pipe.
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			p.first <- sc.Text()
		}
		close(p.first)
		io.Copy(io.Discard, stdout)
		p.err = cmd.Wait()
		close(p.exited)
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
			<-p.exited
			return fmt.Errorf("serverproc: %s exited before announcing its address: %v", p.spec.Bin, p.err)
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

// ErrExited is wrapped by Alive's error.
var ErrExited = errors.New("serverproc: process exited")

// Alive returns an error wrapping ErrExited if the process has exited.
func (p *Proc) Alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%w: %s (pid %d): %v", ErrExited, p.spec.Bin, p.PID, p.err)
	default:
		return nil
	}
}

// Exited is closed once the process has exited and been reaped.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// ExitErr is the process's exit status as Wait reported it; nil for a
// clean exit. Call it after Exited is closed.
func (p *Proc) ExitErr() error {
	<-p.exited
	return p.err
}

// Kill sends SIGKILL, as a crash would, and returns once the process is
// gone and reaped. A process that already exited is not an error.
func (p *Proc) Kill() error {
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("serverproc: kill %d: %w", p.PID, err)
	}
	<-p.exited
	return nil
}

// Stop ends the process, SIGTERM then SIGKILL after StopGrace, and
// returns once it is gone. It may be called more than once.
func (p *Proc) Stop() {
	p.cancel()
	<-p.exited
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
	Crash  string
	Stderr io.Writer
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
	bin := o.Bin
	if o.Exec != nil {
		bin, args = o.Exec(bin, args...)
	}
	return Spec{Bin: bin, Args: args, Announce: serverapi.ParseAnnounce, Stderr: o.Stderr}
}
