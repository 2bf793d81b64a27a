package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	child "github.com/rpcbench/rpcbench/internal/proc"
)

// serviceProc is the service target starts itself (target ADDR -- CMD):
// target.Lifecycle, for the rows that stop it.
type serviceProc struct {
	argv []string
	addr string
	out  io.Writer
	p    *child.Proc
}

// startServiceProc starts argv and waits until addr accepts
// connections. Something already listening there is an error: rpcbench
// would judge it, not the command.
func startServiceProc(ctx context.Context, argv []string, addr string, out io.Writer) (*serviceProc, error) {
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		return nil, usageErrorf("", "something already listens on %s before %s started: stop it, or give another address", addr, argv[0])
	}
	s := &serviceProc{argv: argv, addr: addr, out: out}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *serviceProc) start(ctx context.Context) error {
	// A process group of its own: a signal reaches the service even when
	// the command is a script that started it.
	p, err := child.Start(context.WithoutCancel(ctx), child.Spec{Bin: s.argv[0], Args: s.argv[1:], Stdout: s.out, Stderr: s.out,
		Group: true, WaitDelay: 5 * time.Second})
	if err != nil {
		return &errAdapter{fmt.Errorf("target: %s: %w", strings.Join(s.argv, " "), err)}
	}
	s.p = p
	if err := awaitListen(ctx, s.addr, p); err != nil {
		s.Close()
		return &errAdapter{fmt.Errorf("target: %s: %w", strings.Join(s.argv, " "), err)}
	}
	return nil
}

// Signal sends the process group sig.
func (s *serviceProc) Signal(sig syscall.Signal) error { return s.p.SignalGroup(sig) }

// Wait waits at most d for the process to exit; one still running then
// is killed.
func (s *serviceProc) Wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.p.Exited():
		return true
	case <-t.C:
		s.p.SignalGroup(syscall.SIGKILL)
		<-s.p.Exited()
		return false
	}
}

// Restart starts the command again, once the last one has exited (and
// what was left of its process group was killed). Something still
// listening on the address then (a service the command started outside
// its group) is an error: the rows would judge it, not the new one.
func (s *serviceProc) Restart(ctx context.Context) error {
	s.Close()
	if c, err := net.DialTimeout("tcp", s.addr, time.Second); err == nil {
		c.Close()
		return &errAdapter{fmt.Errorf("target: %s still accepts connections after %s exited: the command must be the service, or exec it", s.addr, s.argv[0])}
	}
	return s.start(ctx)
}

// Close stops the process group (SIGTERM, then SIGKILL) and waits for
// the process.
func (s *serviceProc) Close() {
	if s.p == nil {
		return
	}
	stopGroup(s.p)
	s.p = nil
}
