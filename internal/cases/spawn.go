package cases

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// announcePrefix starts the line rpcserver prints once it listens.
const announcePrefix = "RPCSERVER LISTEN "

// startTimeout bounds how long a server may take to announce itself,
// start delay excluded.
const startTimeout = 10 * time.Second

// serverOpts are the rpcserver flags a scenario sets.
type serverOpts struct {
	// Workers, QueueSize, MaxOutBytes and WriteTimeout set -workers,
	// -queue, -max-out-bytes and -write-timeout; zero leaves the server's
	// default.
	Workers      int
	QueueSize    int
	MaxOutBytes  int
	WriteTimeout time.Duration
	Chunk        bool
	Faults       []string
	StartDelay   time.Duration
	// Addr is the address to bind; empty means 127.0.0.1:0.
	Addr string
	// NoWait returns as soon as the process has started, without waiting
	// for its announce line (for a server that binds late).
	NoWait bool
}

// server is a running rpcserver process.
type server struct {
	Addr    string
	LogPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when Wait returns
	lines   chan string   // stdout lines
	// ctlConns counts connections opened by control calls, so that
	// counters can report the scenario's own connections apart.
	ctlConns int64
}

// startServer starts an rpcserver process that is stopped (SIGTERM, then
// SIGKILL after a grace period) when the scenario ends. On Linux the child
// is also killed if this process dies.
func (t *T) startServer(o serverOpts) *server {
	s, err := startServer(t.ctx, t.env.ServerBin, t.logPath(), o)
	if err != nil {
		t.Fatalf("start rpcserver: %v", err)
	}
	t.cleanup(s.stop)
	return s
}

func startServer(ctx context.Context, bin, logPath string, o serverOpts) (*server, error) {
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	args := []string{"-addr", addr, "-log", logPath}
	if o.Workers > 0 {
		args = append(args, "-workers", strconv.Itoa(o.Workers))
	}
	if o.QueueSize > 0 {
		args = append(args, "-queue", strconv.Itoa(o.QueueSize))
	}
	if o.MaxOutBytes > 0 {
		args = append(args, "-max-out-bytes", strconv.Itoa(o.MaxOutBytes))
	}
	if o.WriteTimeout > 0 {
		args = append(args, "-write-timeout", o.WriteTimeout.String())
	}
	if o.Chunk {
		args = append(args, "-chunk")
	}
	if o.StartDelay > 0 {
		args = append(args, "-start-delay", o.StartDelay.String())
	}
	for _, f := range o.Faults {
		args = append(args, "-fault", f)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = childAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{LogPath: logPath, cmd: cmd, exited: make(chan struct{}), lines: make(chan string, 4)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case s.lines <- sc.Text():
			default:
			}
		}
		close(s.lines)
	}()
	go func() {
		cmd.Wait()
		close(s.exited)
	}()
	if o.NoWait {
		return s, nil
	}
	if err := s.awaitListen(ctx, o.StartDelay+startTimeout); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// awaitListen waits for the announce line and records the address.
func (s *server) awaitListen(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line, ok := <-s.lines:
		if !ok {
			return errors.New("rpcserver exited before announcing its address")
		}
		addr, found := strings.CutPrefix(line, announcePrefix)
		if !found {
			return fmt.Errorf("rpcserver printed %q, want %q<addr>", line, announcePrefix)
		}
		s.Addr = addr
		return nil
	case <-t.C:
		return fmt.Errorf("rpcserver did not announce within %v", timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pid returns the server's process ID.
func (s *server) pid() int { return s.cmd.Process.Pid }

// stop asks the server to exit and kills it if it has not within a
// grace period. It returns once the process is gone.
func (s *server) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(3 * time.Second)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
		s.cmd.Process.Kill()
		<-s.exited
	}
}

// freeAddr returns a loopback address that nothing listens on at the
// moment of the call: the kernel picks the port, which is then released.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// client returns a client for addr that is closed when the scenario ends.
func (t *T) client(addr string, cfg proto.Config) *proto.Client {
	c, err := proto.NewClient(addr, cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.cleanup(func() { c.Close() })
	return c
}

// control sends method to the server over a connection of its own and
// returns the answer's fields. The connection is counted in s.ctlConns so
// scenarios can tell their own connections from these.
func (t *T) control(s *server, method, payload string) proto.Fields {
	c, err := proto.NewClient(s.Addr, proto.DefaultConfig())
	if err != nil {
		t.Fatalf("control client: %v", err)
	}
	defer c.Close()
	r := c.Do(t.ctx, proto.Call{Method: method, Idempotent: method != proto.MethodFault, Payload: []byte(payload)})
	s.ctlConns += c.Stats().ConnsOpened
	if r.Status != proto.StatusOK {
		t.Fatalf("%s %q: %v %s (%v)", method, payload, r.Status, r.Payload, r.Err)
	}
	fs, err := proto.ParseFields(r.Payload)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return fs
}

// counters returns the server's counters as integers.
func (t *T) counters(s *server) map[string]int64 {
	fs := t.control(s, proto.MethodStats, "")
	out := make(map[string]int64, len(fs))
	for k := range fs {
		n, err := fs.Int(k, 0)
		if err != nil {
			t.Fatalf("counter %s: %v", k, err)
		}
		out[k] = n
	}
	// Connections the scenario itself opened, not counting control ones.
	out["conns_scenario"] = out["conns_accepted"] - s.ctlConns
	return out
}

// balance reads an account's balance over a control connection.
func (t *T) balance(s *server, account string) int64 {
	fs := t.control(s, proto.MethodGet, "account="+account)
	b, err := fs.Int("balance", -1)
	if err != nil {
		t.Fatalf("balance of %s: %v", account, err)
	}
	return b
}
