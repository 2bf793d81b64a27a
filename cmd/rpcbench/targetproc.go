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
	stop context.CancelFunc
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
	pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	p, err := child.Start(pctx, child.Spec{Bin: s.argv[0], Args: s.argv[1:], Stdout: s.out, Stderr: s.out,
		Interrupt: syscall.SIGTERM, WaitDelay: 5 * time.Second})
	if err != nil {
		stop()
		return &errAdapter{fmt.Errorf("target: %s: %w", strings.Join(s.argv, " "), err)}
	}
	s.p, s.stop = p, stop
	if err := awaitListen(ctx, s.addr, p); err != nil {
		s.Close()
		return &errAdapter{fmt.Errorf("target: %s: %w", strings.Join(s.argv, " "), err)}
	}
	return nil
}

// Signal sends the process sig.
func (s *serviceProc) Signal(sig syscall.Signal) error { return s.p.Signal(sig) }

// Wait waits at most d for the process to exit; one still running then
// is killed.
func (s *serviceProc) Wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.p.Exited():
		return true
	case <-t.C:
		s.p.Signal(syscall.SIGKILL)
		<-s.p.Exited()
		return false
	}
}

// Restart starts the command again, once the last one has exited.
func (s *serviceProc) Restart(ctx context.Context) error {
	s.Close()
	return s.start(ctx)
}

// Close stops the process (SIGTERM, then SIGKILL) and waits for it.
func (s *serviceProc) Close() {
	if s.p == nil {
		return
	}
	s.stop()
	<-s.p.Exited()
	s.p = nil
}
