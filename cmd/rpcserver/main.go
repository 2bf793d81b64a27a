// Command rpcserver is the fault-injecting RPC server that rpcbench drives.
// It always runs as its own process. Once it is listening it prints one
// line to stdout, serverapi.Announce(addr):
//
//	RPCSERVER LISTEN 127.0.0.1:41234
//
// and then logs events, one JSON object per line, to the file named by
// -log. See internal/proto/SPEC.md for the protocol, the control methods
// and the fault switches.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/grpcwire"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/transport"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the parsed command line.
type options struct {
	addr       string
	logPath    string
	startDelay time.Duration
	cpuProfile string
	logExec    bool
	store      string
	crash      string
	sqlOpts    bank.SQLOptions
	cfg        server.Config
	grpc       bool
	grpcFaults []grpcwire.Fault
	// grpcCfg is the gRPC side's config but for Faults and Log, checked
	// by parse.
	grpcCfg grpcwire.Config
}

// faultList prints fault rules as the LISTEN event reports them.
type faultList []server.Fault

func (l faultList) String() string {
	s := make([]string, len(l))
	for i, ft := range l {
		s[i] = ft.String()
	}
	return strings.Join(s, "; ")
}

// faultFlags is the -fault flag: it refuses a rule the handler's methods
// would never match, so that a typo is a usage error, not a fault that
// silently never fires.
type faultFlags struct {
	methods []string // the handler's business methods
	rules   faultList
}

func (f *faultFlags) String() string { return f.rules.String() }

func (f *faultFlags) Set(v string) error {
	ft, err := server.ParseFault(v)
	if err != nil {
		return err
	}
	if err := ft.CheckMethod(f.methods); err != nil {
		return err
	}
	f.rules = append(f.rules, ft)
	return nil
}

// businessMethods are the methods of the handler rpcserver serves. The
// handler declares them, and a Bank's do not depend on its store, so a
// throwaway one answers before the real store is opened.
func businessMethods() []string { return bank.New(bank.NewMemory(), nil).Methods() }

// configFlags names the flag of each server.Config field it sets, so
// that a value out of range is reported by the flag the user typed.
var configFlags = map[string]string{
	"Workers":          serverapi.FlagWorkers,
	"QueueSize":        serverapi.FlagQueue,
	"MaxQueuedPerConn": serverapi.FlagQueuePerConn,
	"ChunkWindow":      serverapi.FlagChunkWindow,
	"MaxConns":         serverapi.FlagMaxConns,
	"MaxOutBytes":      serverapi.FlagMaxOutBytes,
	"WriteTimeout":     serverapi.FlagWriteTimeout,
	"ReadTimeout":      serverapi.FlagReadTimeout,
	"KeepAlive":        serverapi.FlagKeepAlive,
	"DrainTimeout":     serverapi.FlagDrainTimeout,
}

// grpcConfigFlags names the flag of each grpcwire.Config field rpcserver
// sets, as configFlags does for server.Config.
var grpcConfigFlags = map[string]string{
	"MaxConcurrentStreams": serverapi.FlagGRPCMaxStreams,
	"MaxConns":             serverapi.FlagMaxConns,
	"MaxOutBytes":          serverapi.FlagMaxOutBytes,
	"MaxOutTotal":          serverapi.FlagMaxOutTotal,
	"Workers":              serverapi.FlagWorkers,
	"WriteTimeout":         serverapi.FlagWriteTimeout,
	"ReadTimeout":          serverapi.FlagReadTimeout,
	"KeepAlive":            serverapi.FlagKeepAlive,
}

// faultHelp is the -h section on fault rules, for a handler serving
// methods.
func faultHelp(methods []string) string {
	return `
Fault rules (-fault, repeatable; also ctl.fault at run time): space-separated key=value
  kind=KIND     required: one of
                  late         execute, answer after the budget plus delay
                  sleep        sleep delay in the worker, then execute
                  unavailable  answer UNAVAILABLE without executing
                  noreply      execute, never answer
                  close        execute, close the connection unanswered
                  partial      execute, write half the answer, close
                  badmagic     execute, answer with a bad-magic frame
                  unavailable_after_exec
                               execute, then answer UNAVAILABLE: a lie, for negative controls
                  drain        do not take the request: drain the server there, within
                               -drain-timeout (the request is the first above the drain frame's id)
  method=NAME   only requests for this method, one of ` + strings.Join(methods, ", ") + ` (default: every one)
  count=N       fire on N matching requests, then stop (default 0: every one)
  delay=D       late's extra lateness, sleep's pause (Go duration, e.g. 150ms)
  retry_after=D unavailable only: answer with the hint retry_after_ms=N, asking clients
                to wait at least D (Go duration > 0) before retrying; retry_after=never
                sends N=-1, "do not retry"
Examples: -fault "kind=late method=get count=1 delay=150ms"
          -fault "kind=unavailable count=1 retry_after=200ms"
`
}

// parse reads the command line. It prints the -h text itself, to stderr,
// and returns every other error for run to print.
func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("rpcserver", flag.ContinueOnError)
	// The flag package would print an error followed by the whole -h
	// text; run prints the error alone, with a hint.
	fs.SetOutput(io.Discard)
	def := server.DefaultConfig()
	o := options{cfg: def}
	faults := faultFlags{methods: businessMethods()}
	fs.StringVar(&o.addr, serverapi.FlagAddr, "127.0.0.1:0", "`address` to listen on; port 0 picks a free port")
	fs.StringVar(&o.logPath, serverapi.FlagLog, "", "`file` to append JSON event lines to (default: stderr)")
	fs.DurationVar(&o.startDelay, serverapi.FlagStartDelay, 0, "wait this long before binding (fault: delayed start)")
	fs.StringVar(&o.cpuProfile, serverapi.FlagCPUProfile, "", "write a CPU profile of the whole run to this `file`")
	fs.BoolVar(&o.logExec, serverapi.FlagLogExec, true, "log an EXEC event for every business request that reaches the store, and a CLAIM event for every key taken")
	fs.IntVar(&o.cfg.Workers, serverapi.FlagWorkers, def.Workers, "goroutines executing business requests; with -"+serverapi.FlagGRPC+", the gRPC side has as many slots of its own")
	fs.IntVar(&o.cfg.QueueSize, serverapi.FlagQueue, def.QueueSize, "business requests that may wait for a worker; more are answered UNAVAILABLE")
	fs.IntVar(&o.cfg.MaxQueuedPerConn, serverapi.FlagQueuePerConn, def.MaxQueuedPerConn, "business requests one connection may have queued or executing; more are answered UNAVAILABLE")
	fs.BoolVar(&o.cfg.Chunk, serverapi.FlagChunk, false, "chunk mode: coalesce responses and write them in random 1-13 byte pieces")
	fs.DurationVar(&o.cfg.ChunkWindow, serverapi.FlagChunkWindow, def.ChunkWindow, "how long chunk mode gathers responses; positive with -"+serverapi.FlagChunk)
	fs.IntVar(&o.cfg.MaxConns, serverapi.FlagMaxConns, def.MaxConns, "connections open at once; more are closed on accept (with -"+serverapi.FlagGRPC+", on each wire separately)")
	fs.IntVar(&o.cfg.MaxOutBytes, serverapi.FlagMaxOutBytes, def.MaxOutBytes, "unwritten answer bytes per connection before its reader stops reading; with -"+serverapi.FlagGRPC+", a gRPC connection's unwritten DATA bytes past which its new requests are refused (REFUSED_STREAM)")
	fs.DurationVar(&o.cfg.WriteTimeout, serverapi.FlagWriteTimeout, def.WriteTimeout, "disconnect a peer that accepts no bytes for this long")
	fs.DurationVar(&o.cfg.ReadTimeout, serverapi.FlagReadTimeout, def.ReadTimeout, "disconnect a peer that takes longer than this to finish a frame it began (slowloris); idle connections are kept")
	fs.DurationVar(&o.cfg.KeepAlive, serverapi.FlagKeepAlive, def.KeepAlive, "TCP keepalive idle time: a peer silent this long is probed, and dropped if it answers none (probe interval from -"+serverapi.FlagWriteTimeout+"); 0: no keepalive")
	fs.DurationVar(&o.cfg.DrainTimeout, serverapi.FlagDrainTimeout, def.DrainTimeout, "how long a drain (SIGTERM, ctl.drain, a drain fault) may take; 0: SIGTERM closes at once, as SIGINT does")
	fs.StringVar(&o.store, serverapi.FlagStore, bank.KindMemory, "where accounts and idempotency records live, a `spec`: "+bank.StoreSyntax)
	fs.DurationVar(&o.sqlOpts.TTL, serverapi.FlagDedupTTL, bank.DefaultTTL, "how long a SQL store keeps an idempotency record; must exceed the longest client retry window")
	fs.DurationVar(&o.sqlOpts.Lease, serverapi.FlagDedupLease, bank.DefaultLease, "how long a SQL store's claim holds a running key before a retry may take it over; at least 1ms")
	fs.StringVar(&o.crash, serverapi.FlagCrash, "", "fault: SIGKILL this process when the first keyed debit reaches this `point`: "+serverapi.CrashBeforeCommit+" or "+serverapi.CrashAfterCommit)
	fs.Var(&faults, serverapi.FlagFault, "fault `rule`, repeatable, e.g. \"kind=late method=get count=1 delay=150ms\"")
	grpcFaults := grpcFaultFlags{methods: faults.methods}
	fs.BoolVar(&o.grpc, serverapi.FlagGRPC, false, "gRPC mode: serve the Bank gRPC service (h2c) on the same listener too; see internal/grpcwire/SPEC.md")
	gdef := grpcwire.DefaultConfig()
	grpcStreams := int64(gdef.MaxConcurrentStreams)
	fs.Int64Var(&grpcStreams, serverapi.FlagGRPCMaxStreams, grpcStreams, "with -"+serverapi.FlagGRPC+": SETTINGS_MAX_CONCURRENT_STREAMS, the streams a gRPC connection may have open; more are refused (REFUSED_STREAM)")
	fs.Int64Var(&o.grpcCfg.MaxOutTotal, serverapi.FlagMaxOutTotal, gdef.MaxOutTotal, "with -"+serverapi.FlagGRPC+": unwritten answer bytes across all gRPC connections past which new requests are refused (REFUSED_STREAM)")
	fs.Var(&grpcFaults, serverapi.FlagGRPCFault, "gRPC fault `rule`, repeatable, with -"+serverapi.FlagGRPC+", e.g. \"kind=rst code=CANCEL method=debit count=1\" (internal/grpcwire/SPEC.md)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintf(stderr, "Usage of rpcserver:\n")
			fs.PrintDefaults()
			fmt.Fprint(stderr, faultHelp(faults.methods))
			return o, err
		}
		return o, usageError{err}
	}
	if fs.NArg() > 0 {
		return o, usagef("unexpected arguments %q", fs.Args())
	}
	o.cfg.Faults = faults.rules
	o.grpcFaults = grpcFaults.rules
	var needGRPC error
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case serverapi.FlagGRPCFault, serverapi.FlagGRPCMaxStreams, serverapi.FlagMaxOutTotal:
			if !o.grpc && needGRPC == nil {
				needGRPC = usagef("-%s needs -%s", f.Name, serverapi.FlagGRPC)
			}
		}
	})
	if needGRPC != nil {
		return o, needGRPC
	}
	switch o.crash {
	case "", serverapi.CrashBeforeCommit, serverapi.CrashAfterCommit:
	default:
		return o, usagef("-%s %q: want %s or %s", serverapi.FlagCrash, o.crash, serverapi.CrashBeforeCommit, serverapi.CrashAfterCommit)
	}
	if o.startDelay < 0 {
		return o, usagef("-%s %v must not be negative (0 binds at once)", serverapi.FlagStartDelay, o.startDelay)
	}
	if o.sqlOpts.Lease < time.Millisecond || o.sqlOpts.TTL <= o.sqlOpts.Lease {
		return o, usagef("-%s %v must be at least 1ms, and -%s %v longer than it",
			serverapi.FlagDedupLease, o.sqlOpts.Lease, serverapi.FlagDedupTTL, o.sqlOpts.TTL)
	}
	if err := o.cfg.Validate(); err != nil {
		var fe *transport.FieldError
		if errors.As(err, &fe) && configFlags[fe.Field] != "" {
			return o, usagef("-%s %v %s", configFlags[fe.Field], fe.Value, fe.Rule)
		}
		return o, usageError{err}
	}
	if grpcStreams < 1 || grpcStreams > math.MaxUint32 {
		return o, usagef("-%s %d must be between 1 and %d", serverapi.FlagGRPCMaxStreams, grpcStreams, uint32(math.MaxUint32))
	}
	total := o.grpcCfg.MaxOutTotal
	o.grpcCfg = gdef
	o.grpcCfg.MaxConcurrentStreams = uint32(grpcStreams)
	o.grpcCfg.MaxOutTotal = total
	// The limits both wires share hold on each separately: the gRPC
	// side has as many connections, worker slots and unwritten bytes per
	// connection of its own.
	o.grpcCfg.MaxConns = o.cfg.MaxConns
	o.grpcCfg.MaxOutBytes = int64(o.cfg.MaxOutBytes)
	o.grpcCfg.Workers = o.cfg.Workers
	o.grpcCfg.WriteTimeout = o.cfg.WriteTimeout
	o.grpcCfg.ReadTimeout = o.cfg.ReadTimeout
	o.grpcCfg.KeepAlive = o.cfg.KeepAlive
	if err := o.grpcCfg.Validate(); err != nil {
		var fe *transport.FieldError
		if errors.As(err, &fe) && grpcConfigFlags[fe.Field] != "" {
			return o, usagef("-%s %v %s", grpcConfigFlags[fe.Field], fe.Value, fe.Rule)
		}
		return o, usageError{err}
	}
	return o, nil
}

// run is rpcserver's whole life; its result is the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if err == nil {
		err = serve(o, stdout, stderr)
	}
	report(stderr, err)
	return exitCode(err)
}

// serve opens the log, starts the server and serves until a signal.
func serve(o options, stdout, stderr io.Writer) error {
	logOut := stderr
	if o.logPath != "" {
		f, err := os.OpenFile(o.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("-%s: %w", serverapi.FlagLog, err)
		}
		defer f.Close()
		logOut = f
	}
	level := slog.LevelInfo
	if o.logExec {
		level = slog.LevelDebug // EXEC events are logged at debug level
	}
	lg := slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: level}))
	o.cfg.Log = lg

	if o.cpuProfile != "" {
		stop, err := startProfile(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("-%s: %w", serverapi.FlagCPUProfile, err)
		}
		defer stop()
	}

	o.sqlOpts.Hooks = crashHooks(o.crash, lg)
	o.sqlOpts.OnSweep = func(n int64, err error) {
		if err != nil {
			lg.Error(serverapi.EventStoreError, serverapi.KeyErr, err.Error())
		} else if n > 0 {
			lg.Info(serverapi.EventSweep, serverapi.KeyDeleted, n)
		}
	}
	st, err := bank.Open(o.store, o.sqlOpts)
	if errors.Is(err, bank.ErrStoreSpec) {
		return usageError{fmt.Errorf("-%s: %w", serverapi.FlagStore, err)}
	}
	if err != nil {
		return fmt.Errorf("-%s: %w", serverapi.FlagStore, err)
	}
	defer st.Close()
	lg.Info(serverapi.EventStoreOpen, serverapi.KeyStore, st.Kind, serverapi.KeyTTL, o.sqlOpts.TTL.String(), serverapi.KeyLease, o.sqlOpts.Lease.String())

	b := bank.New(st.Store, lg)
	var gs *grpcwire.Server
	if o.grpc {
		gcfg := o.grpcCfg
		gcfg.Faults, gcfg.Log = o.grpcFaults, lg
		if gs, err = grpcwire.New(gcfg, b); err != nil {
			return err
		}
		defer gs.Close()
		o.cfg.Control = grpcControl(gs, lg)
	}
	srv, err := server.New(o.cfg, b)
	if err != nil {
		return err
	}
	defer srv.Close()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if o.startDelay > 0 {
		lg.Info(serverapi.EventStartDelay, serverapi.KeyDelay, o.startDelay.String())
		select {
		case <-time.After(o.startDelay):
		case s := <-sigs:
			lg.Info(serverapi.EventSignal, serverapi.KeySignal, s.String())
			return nil
		}
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("-%s: %w", serverapi.FlagAddr, err)
	}
	config := fmt.Sprintf(
		"workers=%d queue=%d queue-per-conn=%d max-conns=%d max-out-bytes=%d write-timeout=%v read-timeout=%v keepalive=%v chunk=%v faults=[%v]",
		o.cfg.Workers, o.cfg.QueueSize, o.cfg.MaxQueuedPerConn, o.cfg.MaxConns, o.cfg.MaxOutBytes, o.cfg.WriteTimeout, o.cfg.ReadTimeout, o.cfg.KeepAlive, o.cfg.Chunk, faultList(o.cfg.Faults))
	rpcLn := ln
	// Nil without the gRPC mode: a nil channel is never ready.
	var grpcErrc chan error
	if gs != nil {
		gf := grpcFaultFlags{rules: o.grpcFaults}
		config += fmt.Sprintf(" grpc=true grpc-max-streams=%d max-out-total=%d grpc-faults=[%v]",
			o.grpcCfg.MaxConcurrentStreams, o.grpcCfg.MaxOutTotal, gf.String())
		var h2Ln net.Listener
		rpcLn, h2Ln = splitListener(ln)
		grpcErrc = make(chan error, 1)
		go func() { grpcErrc <- gs.Serve(h2Ln) }()
	}
	lg.Info(serverapi.EventListen, serverapi.KeyAddr, ln.Addr().String(), serverapi.KeyConfig, config)
	fmt.Fprintln(stdout, serverapi.Announce(ln.Addr().String()))

	rpcErrc := make(chan error, 1)
	go func() { rpcErrc <- srv.Serve(rpcLn) }()
	// stop closes both sides and waits for their Serves; rpcDone says
	// the rpc side's has returned already.
	stop := func(rpcDone bool) {
		srv.Close()
		if !rpcDone {
			<-rpcErrc
		}
		if gs != nil {
			gs.Close()
			<-grpcErrc
		}
	}
	select {
	case s := <-sigs:
		lg.Info(serverapi.EventSignal, serverapi.KeySignal, s.String())
		if s == syscall.SIGTERM && o.cfg.DrainTimeout > 0 {
			drain(srv, gs, o.cfg.DrainTimeout, sigs, lg)
		}
		stop(false)
		return nil
	case err := <-rpcErrc:
		// ErrClosed: a drain that ctl.drain or a drain fault started
		// has ended.
		if !errors.Is(err, server.ErrClosed) {
			return err
		}
		stop(true)
		return nil
	case err := <-grpcErrc:
		// A drain closes the shared listener, which ends the gRPC
		// side's Serve with net.ErrClosed; the drain goes on.
		if !errors.Is(err, net.ErrClosed) {
			return err
		}
		grpcErrc <- err
		err = <-rpcErrc
		if !errors.Is(err, server.ErrClosed) {
			return err
		}
		stop(true)
		return nil
	}
}

// drain drains srv, and the gRPC side gs when there is one, both at
// once within timeout; a SIGINT meanwhile cuts it short.
func drain(srv *server.Server, gs *grpcwire.Server, timeout time.Duration, sigs <-chan os.Signal, lg *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		if gs != nil {
			wg.Go(func() { gs.Drain(ctx) })
		}
		srv.Drain(ctx)
		wg.Wait()
	}()
	for {
		select {
		case <-done:
			return
		case s := <-sigs:
			lg.Info(serverapi.EventSignal, serverapi.KeySignal, s.String())
			if s == syscall.SIGINT {
				cancel()
			}
		}
	}
}

// crashHooks returns the store hooks that kill this process at the point
// -crash names, once; none for "".
func crashHooks(point string, lg *slog.Logger) bank.Hooks {
	if point == "" {
		return bank.Hooks{}
	}
	var fired atomic.Bool
	kill := func() {
		if !fired.CompareAndSwap(false, true) {
			return
		}
		lg.Warn(serverapi.EventCrash, serverapi.KeyPoint, point)
		// SIGKILL: no deferred function, no flush, no answer; the
		// store's files are left as a real crash leaves them.
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	if point == serverapi.CrashBeforeCommit {
		return bank.Hooks{BeforeCommit: kill}
	}
	return bank.Hooks{AfterCommit: kill}
}

// startProfile starts a CPU profile into path and returns what stops it.
func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
