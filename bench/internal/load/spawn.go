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
		spec := serverproc.RPCServer{
			Bin:     bins.rpcserver,
			Workers: o.Workers,
			LogPath: filepath.Join(dir, sys.Server+".log"),
			// Every system is measured without a log line per request.
			NoExecLog: true,
			Store:     store,
			GRPC:      sys.GRPC,
			Stderr:    stderr,
		}.Spec()
		if o.ServerCPUProfile != "" {
			spec.Args = append(spec.Args, "-"+serverapi.FlagCPUProfile, o.ServerCPUProfile+"."+sys.Server+".pprof")
		}
		if maxConns > 0 {
			spec.Args = append(spec.Args, "-"+serverapi.FlagMaxConns, strconv.Itoa(maxConns))
		}
		return spec
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
