// Command rpcserver is the fault-injecting RPC server that rpcbench drives.
// It always runs as its own process. Once it is listening it prints one
// line to stdout:
//
//	RPCSERVER LISTEN 127.0.0.1:41234
//
// and then logs events to the file named by -log. See
// internal/proto/SPEC.md for the protocol, the control methods and the
// fault switches.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// AnnouncePrefix starts the line rpcserver prints once it is listening.
const AnnouncePrefix = "RPCSERVER LISTEN "

type faultFlags []proto.Fault

func (f *faultFlags) String() string {
	s := make([]string, len(*f))
	for i, ft := range *f {
		s[i] = ft.String()
	}
	return strings.Join(s, "; ")
}

func (f *faultFlags) Set(v string) error {
	ft, err := proto.ParseFault(v)
	if err != nil {
		return err
	}
	*f = append(*f, ft)
	return nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rpcserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := proto.DefaultServerConfig()
	var (
		addr       = fs.String("addr", "127.0.0.1:0", "address to listen on; port 0 picks a free port")
		logPath    = fs.String("log", "", "file to append event lines to (default: stderr)")
		startDelay = fs.Duration("start-delay", 0, "wait this long before binding (fault: delayed start)")
		cpuProfile = fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
		faults     faultFlags
		cfg        = def
	)
	fs.IntVar(&cfg.Workers, "workers", def.Workers, "goroutines executing business requests")
	fs.IntVar(&cfg.QueueSize, "queue", def.QueueSize, "business requests that may wait for a worker; more are answered UNAVAILABLE")
	fs.BoolVar(&cfg.Chunk, "chunk", false, "chunk mode: coalesce responses and write them in random 1-13 byte pieces")
	fs.DurationVar(&cfg.ChunkWindow, "chunk-window", def.ChunkWindow, "how long chunk mode gathers responses")
	fs.IntVar(&cfg.MaxConns, "max-conns", def.MaxConns, "connections open at once; more are closed on accept")
	fs.IntVar(&cfg.MaxOutBytes, "max-out-bytes", def.MaxOutBytes, "unwritten answer bytes per connection before its reader stops reading")
	fs.DurationVar(&cfg.WriteTimeout, "write-timeout", def.WriteTimeout, "disconnect a peer that accepts no bytes for this long")
	fs.Var(&faults, "fault", `fault rule, repeatable, e.g. "kind=late method=get count=1 delay=150ms"`)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rpcserver: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return 2
	}
	cfg.Faults = faults

	logOut := stderr
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "rpcserver: %v\n", err)
			return 1
		}
		defer f.Close()
		logOut = f
	}
	cfg.Log = log.New(logOut, "", log.Ltime|log.Lmicroseconds)

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "rpcserver: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "rpcserver: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}

	srv, err := proto.NewServer(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "rpcserver: %v\n", err)
		return 2
	}
	defer srv.Close()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if *startDelay > 0 {
		cfg.Log.Printf("START_DELAY %v", *startDelay)
		select {
		case <-time.After(*startDelay):
		case s := <-sigs:
			cfg.Log.Printf("SIGNAL %v before bind", s)
			return 0
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "rpcserver: %v\n", err)
		return 1
	}
	cfg.Log.Printf("LISTEN addr=%v workers=%d queue=%d max-conns=%d max-out-bytes=%d write-timeout=%v chunk=%v faults=[%v]",
		ln.Addr(), cfg.Workers, cfg.QueueSize, cfg.MaxConns, cfg.MaxOutBytes, cfg.WriteTimeout, cfg.Chunk, &faults)
	fmt.Fprintf(stdout, "%s%s\n", AnnouncePrefix, ln.Addr())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case s := <-sigs:
		cfg.Log.Printf("SIGNAL %v: shutting down", s)
		srv.Close()
		<-errc
		return 0
	case err := <-errc:
		fmt.Fprintf(stderr, "rpcserver: %v\n", err)
		return 1
	}
}
