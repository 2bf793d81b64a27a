package load

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/serverproc"
)

// benchpeerAnnounce starts the line benchpeer prints once it listens.
const benchpeerAnnounce = "LISTEN "

// defaultMaxConns is rpcserver's default -max-conns.
const defaultMaxConns = 1024

// serverSpec returns how to start the server sys talks to; store is the
// -store spec of an rpcserver, empty for its default, and maxConns its
// -max-conns, 0 for its default.
func serverSpec(sys System, store string, maxConns int, o *Options, bins binaries, dir string, stderr io.Writer) serverproc.Spec {
	if sys.Store != "" {
		return rpcServerSpec(rpcServerProc{sys: sys, name: sys.Server, store: store, maxConns: maxConns}, o, bins, dir, stderr)
	}
	return serverproc.Spec{
		Bin:  bins.benchpeer,
		Args: []string{"-kind", sys.Server, "-addr", "127.0.0.1:0"},
		Announce: func(line string) (string, error) {
			addr, ok := strings.CutPrefix(line, benchpeerAnnounce)
			if !ok {
				return "", fmt.Errorf("load: benchpeer printed %q, want %q<addr>", line, benchpeerAnnounce)
			}
			return addr, nil
		},
		Stderr: stderr,
	}
}

// rpcServerProc is one rpcserver process of a run.
type rpcServerProc struct {
	sys System
	// name names the process's files: its log (serverLog) and its CPU
	// profile.
	name string
	// addr is the address to bind; empty for 127.0.0.1:0.
	addr     string
	store    string // -store; empty for the in-memory store
	maxConns int    // -max-conns; 0 for the default
	// drainTimeout is -drain-timeout when positive.
	drainTimeout time.Duration
}

// rpcServerSpec returns how to start the rpcserver p.
func rpcServerSpec(p rpcServerProc, o *Options, bins binaries, dir string, stderr io.Writer) serverproc.Spec {
	spec := serverproc.RPCServer{
		Bin:     bins.rpcserver,
		Addr:    p.addr,
		Workers: o.Workers,
		LogPath: serverLog(dir, p.name),
		// Every system is measured without a log line per request.
		NoExecLog:    true,
		Store:        p.store,
		GRPC:         p.sys.GRPC,
		DrainTimeout: p.drainTimeout,
		Stderr:       stderr,
	}.Spec()
	if o.ServerCPUProfile != "" {
		spec.Args = append(spec.Args, "-"+serverapi.FlagCPUProfile, o.ServerCPUProfile+"."+p.name+".pprof")
	}
	if p.maxConns > 0 {
		spec.Args = append(spec.Args, "-"+serverapi.FlagMaxConns, strconv.Itoa(p.maxConns))
	}
	return spec
}

// serverLog is the path of the event log of the rpcserver named name.
func serverLog(dir, name string) string { return filepath.Join(dir, name+".log") }

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
