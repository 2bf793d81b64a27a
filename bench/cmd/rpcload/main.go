// Command rpcload runs one workload against rpcbench and its comparison
// systems, each server in its own process on loopback, and prints one
// markdown table of calls/s, latency, CPU and allocations per system:
//
//	cd bench && go run ./cmd/rpcload [flags]
//
// Progress goes to stderr, the table to stdout. It exits 0 when every call
// of every row ended OK, 1 when any did not or the run failed, and 2 for a
// usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/bench/internal/load"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are rpcload's flags beyond load.Options.
type options struct {
	load      load.Options
	jsonPath  string
	memprof   string
	systems   string
	gs        string
	memConns  string
	profSys   string
	quietLogs bool
}

func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{load: load.DefaultOptions()}
	fs := flag.NewFlagSet("rpcload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var keys, defaults []string
	for _, s := range load.Systems() {
		keys = append(keys, s.Key)
		if s.Default {
			defaults = append(defaults, s.Key)
		}
	}
	fs.StringVar(&o.systems, "systems", strings.Join(defaults, ","), "comma-separated systems to run, in row order, of "+strings.Join(keys, ",")+"; "+
		load.GroupDebits+" names every row of debits, "+load.GroupShapes+" every row of the shapes of load, "+load.GroupGRPCBank+" the two rows of grpc-go's Bank client against rpcserver -grpc and against grpc-go's server, "+load.GroupRolling+" the two rows of a p2c client of 3 rpcservers, steady and restarted in turn, and "+load.KeyConnsMemory+" the measurement of memory per idle connection")
	fs.StringVar(&o.gs, "g", "8,64", "comma-separated concurrency levels: goroutines sharing one client")
	fs.StringVar(&o.memConns, "memory-conns", joinInts(o.load.MemoryConns), "comma-separated, increasing counts of idle connections at which "+load.KeyConnsMemory+" reads a server's RSS")
	fs.IntVar(&o.load.N, "n", o.load.N, "measured calls per row per round (rpcbench-per-request and rpcbench-keyed-sqlite/postgres make n/10)")
	fs.IntVar(&o.load.Warmup, "warmup", o.load.Warmup, "unmeasured calls before each measured phase")
	fs.IntVar(&o.load.Rounds, "rounds", o.load.Rounds, "rounds; every row runs once per round, interleaved, and the table gives medians")
	fs.IntVar(&o.load.Workers, "workers", o.load.Workers, "rpcserver -workers")
	fs.DurationVar(&o.load.RowTimeout, "row-timeout", o.load.RowTimeout, "bound on one row; calls still running then count as non-OK")
	fs.StringVar(&o.load.RPCServer, "rpcserver", "", "prebuilt rpcserver binary (default: go build it)")
	fs.StringVar(&o.load.BenchPeer, "benchpeer", "", "prebuilt benchpeer binary (default: go build it)")
	fs.StringVar(&o.jsonPath, "json", "", "also write the report, every round included, as JSON to this file")
	fs.StringVar(&o.load.CPUProfile, "cpuprofile", "", "write a CPU profile of the driver's measured phases of the -profile systems to PREFIX.SYSTEM.gG.rROUND.pprof")
	fs.StringVar(&o.profSys, "profile", load.KeyRPCBench, "comma-separated systems -cpuprofile profiles")
	fs.StringVar(&o.load.ServerCPUProfile, "server-cpuprofile", "", "write a CPU profile of each rpcserver's whole life to PREFIX.SERVER.pprof")
	fs.StringVar(&o.memprof, "memprofile", "", "write the driver's allocation profile, whole run, to this file at the end (use with -systems rpcbench)")
	fs.BoolVar(&o.quietLogs, "q", false, "no progress lines on stderr")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o.load.Systems = splitList(o.systems)
	o.load.ProfileSystems = splitList(o.profSys)
	var err error
	if o.load.G, err = parseInts("-g", o.gs); err != nil {
		return nil, err
	}
	if o.load.MemoryConns, err = parseInts("-memory-conns", o.memConns); err != nil {
		return nil, err
	}
	if err := o.load.Validate(); err != nil {
		return nil, err
	}
	return o, nil
}

// parseInts parses the comma-separated integers of flag name.
func parseInts(name, s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not an integer", name, f)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(ns []int) string {
	var fs []string
	for _, n := range ns {
		fs = append(fs, strconv.Itoa(n))
	}
	return strings.Join(fs, ",")
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "rpcload: %v\n", err)
		return exitUsage
	}
	if !o.quietLogs {
		o.load.Log = stderr
	}
	start := time.Now()
	rep, runErr := load.Run(ctx, o.load)
	if rep == nil {
		fmt.Fprintf(stderr, "rpcload: %v\n", runErr)
		return exitFail
	}
	for _, sk := range rep.Skipped {
		fmt.Fprintf(stderr, "rpcload: %s left out: %s\n", sk.System, sk.Reason)
	}
	if err := rep.WriteMarkdown(stdout); err != nil {
		fmt.Fprintf(stderr, "rpcload: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(stderr, "rpcload: %d rows in %v (%v including build and server start)\n",
		len(rep.Rows), rep.Wall.Round(time.Second), time.Since(start).Round(time.Second))
	if o.jsonPath != "" {
		if err := writeFile(o.jsonPath, rep.WriteJSON); err != nil {
			fmt.Fprintf(stderr, "rpcload: %v\n", err)
			return exitFail
		}
	}
	if o.memprof != "" {
		err := writeFile(o.memprof, func(w io.Writer) error { return pprof.Lookup("allocs").WriteTo(w, 0) })
		if err != nil {
			fmt.Fprintf(stderr, "rpcload: %v\n", err)
			return exitFail
		}
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "rpcload: %v\n", runErr)
		return exitFail
	}
	for _, r := range rep.Rows {
		if r.NonOK > 0 {
			fmt.Fprintf(stderr, "rpcload: %s G=%d: %d of %d calls not OK\n", r.System, r.G, r.NonOK, r.TotalCalls)
			return exitFail
		}
		if r.ExecErrors > 0 {
			fmt.Fprintf(stderr, "rpcload: %s G=%d: %s\n", r.System, r.G, r.FirstExecError)
			return exitFail
		}
	}
	return exitOK
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
