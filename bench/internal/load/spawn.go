package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Announce prefixes: rpcserver and benchpeer print one line with their
// address once they listen.
const (
	rpcserverAnnounce = "RPCSERVER LISTEN "
	benchpeerAnnounce = "LISTEN "
)

// startTimeout bounds how long a server may take to announce itself.
const startTimeout = 10 * time.Second

// stopGrace is how long a server has to exit after SIGTERM before it is
// killed.
const stopGrace = 3 * time.Second

// serverProc is a running server process.
type serverProc struct {
	Kind string
	Addr string
	PID  int

	cancel context.CancelFunc
	exited chan struct{} // closed when Wait returns
	err    error         // Wait's error; read after exited is closed
}

// serverArgs returns the command line of the server for kind.
func serverArgs(kind string, o *Options, bins binaries, dir string) (bin string, args []string, announce string) {
	if kind == serverRPC {
		return bins.rpcserver, []string{
			"-addr", "127.0.0.1:0",
			"-workers", strconv.Itoa(o.Workers),
			"-log", filepath.Join(dir, "rpcserver.log"),
		}, rpcserverAnnounce
	}
	return bins.benchpeer, []string{"-kind", kind, "-addr", "127.0.0.1:0"}, benchpeerAnnounce
}

// startServer starts bin and waits for its announce line. The process
// gets SIGTERM, then SIGKILL after stopGrace, when stop is called or ctx
// ends; on Linux the kernel kills it if the driver dies.
func startServer(ctx context.Context, kind, bin string, args []string, announce string, stderr io.Writer) (*serverProc, error) {
	if stderr == nil {
		stderr = io.Discard
	}
	ctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = stopGrace
	cmd.SysProcAttr = childAttr()
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("load: %s: %w", kind, err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("load: start %s: %w", kind, err)
	}
	s := &serverProc{Kind: kind, PID: cmd.Process.Pid, cancel: cancel, exited: make(chan struct{})}
	first := make(chan string, 1)
	go func() {
		// Wait only once stdout is drained: it closes the pipe.
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		io.Copy(io.Discard, stdout)
		s.err = cmd.Wait()
		close(s.exited)
	}()

	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case line, ok := <-first:
		if !ok {
			s.stop()
			return nil, fmt.Errorf("load: %s exited before announcing its address: %v", kind, s.err)
		}
		addr, found := strings.CutPrefix(line, announce)
		if !found {
			s.stop()
			return nil, fmt.Errorf("load: %s printed %q, want %q<addr>", kind, line, announce)
		}
		s.Addr = addr
		return s, nil
	case <-t.C:
		s.stop()
		return nil, fmt.Errorf("load: %s did not announce within %v", kind, startTimeout)
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
}

// errServerExited is wrapped by alive's error.
var errServerExited = errors.New("load: server exited")

// alive reports an error if the process has exited.
func (s *serverProc) alive() error {
	select {
	case <-s.exited:
		return fmt.Errorf("%w: %s (pid %d): %v", errServerExited, s.Kind, s.PID, s.err)
	default:
		return nil
	}
}

// stop ends the process and returns once it is gone.
func (s *serverProc) stop() {
	s.cancel()
	<-s.exited
}

// binaries are the server executables.
type binaries struct {
	rpcserver, benchpeer string
}

// build returns the server binaries the run needs, building with `go build`
// into dir those not given in o.
func build(ctx context.Context, o *Options, needRPC, needPeer bool, dir string, log io.Writer) (binaries, error) {
	b := binaries{rpcserver: o.RPCServer, benchpeer: o.BenchPeer}
	var pkgs []string
	if needRPC && b.rpcserver == "" {
		pkgs = append(pkgs, "github.com/rpcbench/rpcbench/cmd/rpcserver")
		b.rpcserver = filepath.Join(dir, "rpcserver")
	}
	if needPeer && b.benchpeer == "" {
		pkgs = append(pkgs, "github.com/rpcbench/rpcbench/bench/cmd/benchpeer")
		b.benchpeer = filepath.Join(dir, "benchpeer")
	}
	if len(pkgs) == 0 {
		return b, nil
	}
	fmt.Fprintf(log, "building %s\n", strings.Join(pkgs, " "))
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", dir + string(os.PathSeparator)}, pkgs...)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return b, fmt.Errorf("load: go build (run from the bench module, or pass -rpcserver and -benchpeer): %w", err)
	}
	return b, nil
}
