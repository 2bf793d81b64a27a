package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/schema"
	"github.com/rpcbench/rpcbench/internal/target"
)

// targetOptions are target's flags.
type targetOptions struct {
	*app
	Addr string
	// Method and Data are the call every row sends.
	Method, Data string
	// Protos, ImportPaths and DescriptorSet give the schema; none:
	// server reflection.
	Protos, ImportPaths []string
	DescriptorSet       string
	// Observe, ObserveData and ObserveField are the observe oracle;
	// PerExec how far the field moves per execution (0: calibrate).
	Observe, ObserveData, ObserveField string
	PerExec                            int64
	// SlowData and SlowFor are the slow request and how long its
	// handler takes.
	SlowData string
	SlowFor  time.Duration
	// Settle, LateWindow and Trials are target.Service's.
	Settle, LateWindow time.Duration
	Trials             int
	Name               string
	Evidence           string
	JSON               string
	// Command is the service to start, after --; nil for a service
	// already running.
	Command []string
	control
}

func newTargetCmd(a *app) *cobra.Command {
	o := &targetOptions{app: a}
	cmd := &cobra.Command{
		Use:   "target ADDR --method SERVICE/METHOD [--data JSON] [--observe SERVICE/METHOD --observe-data JSON --observe-field FIELD] [flags] [-- COMMAND ARGS...]",
		Short: "Judge a running gRPC service of yours, any schema, from outside",
		Example: `  rpcbench target 127.0.0.1:50051 --method shop.v1.Orders/Place --data '{"item":"x"}' \
      --observe shop.v1.Orders/Count --observe-field placed          # schema by server reflection
  rpcbench target 127.0.0.1:50051 --proto shop.proto -I protos --method shop.v1.Orders/Place --data @place.json
  rpcbench target 127.0.0.1:50051 --descriptor-set shop.binpb --method shop.v1.Orders/Place   # executions unknown
  rpcbench target 127.0.0.1:50051 --method shop.v1.Orders/Place --run 'timeout_0n|oversize'
  rpcbench target 127.0.0.1:50051 --method shop.v1.Orders/Place --observe shop.v1.Orders/Count --observe-field placed \
      --slow-data '{"item":"slow"}' --slow-for 1s -- ./shop --addr 127.0.0.1:50051 --db shop.db   # rpcbench starts it`,
		Long: `Judge a running gRPC service (h2c: HTTP/2 without TLS) from outside, as the
grpc group's server section judges the server adapters: calls whose
grpc-timeout has already passed (0n, 1n) must not execute, every answer
must say whether its call executed (1u to 1m), a body after the deadline
must not execute, a malformed message or frame must close only its
stream or connection, a message announced too large must be refused
unread.

The schema comes from --proto files (with -I import paths), a
--descriptor-set (protoc --include_imports --descriptor_set_out), or, by
default, the service's server reflection (grpc.reflection.v1, else
v1alpha). --method is the call every row sends, with --data as its
request in JSON (protojson, as grpcurl takes it; @FILE reads a file): a
write, whose executions the rows count.

Whether a call executed is never taken from its answer. --observe names
a read whose answer's integer field (--observe-field, dotted for nested
messages) moves by a known amount with each execution: a balance, a
counter, a row count. rpcbench reads it before and after every trial,
one trial at a time, and --settle after each answer; --per-exec gives the
move per execution, else one plain call, which must answer OK, measures
it first. Nothing else may change that field while the rows run. Without
--observe, executions are unknown and the invariants that need them are
n/a.

With -- COMMAND, rpcbench starts the service itself (ADDR must be free
until it listens there), stops it when the rows are done, and runs two
rows more, which stop it and start it again: target_sigterm_drain sends
SIGTERM while the slow call's handler runs (the drain must answer it,
truthfully), target_sigkill_after_ok sends SIGKILL as soon as a call was
answered OK (the execution must still be counted after the restart).
Their executions are counted after the restart, so the service must
keep its state where a restart finds it. Without a command they are n/a.

Outputs are those of 'rpcbench all': CASE lines, the evidence directory
(default rpcbench-target/), --json, --junit, --json-events; a violated
invariant is a FAIL, and the exit status says so.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				if len(args) == dash {
					return usageErrorf(cmd.UsageString(), "target takes a command after --: the service to start")
				}
				o.Command = args[dash:]
				args = args[:dash]
			}
			if len(args) != 1 {
				return usageErrorf(cmd.UsageString(), "target takes one address, HOST:PORT (got %d arguments)", len(args))
			}
			if _, _, err := net.SplitHostPort(args[0]); err != nil {
				return usageErrorf(cmd.UsageString(), "target %q: %v: give HOST:PORT", args[0], err)
			}
			o.Addr = args[0]
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return runTarget(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Method, "method", "", "the method every row calls, SERVICE/METHOD (pkg.Service/Method): a write")
	f.StringVar(&o.Data, "data", "{}", "its request as JSON, or @FILE")
	f.StringArrayVar(&o.Protos, "proto", nil, "a .proto file of the service's schema (repeatable); default: server reflection")
	f.StringArrayVarP(&o.ImportPaths, "import-path", "I", nil, "where --proto files and their imports are found (repeatable)")
	f.StringVar(&o.DescriptorSet, "descriptor-set", "", "the schema as a FileDescriptorSet file (protoc --include_imports --descriptor_set_out)")
	f.StringVar(&o.Observe, "observe", "", "the execution oracle: a read, SERVICE/METHOD, whose answer moves with each execution")
	f.StringVar(&o.ObserveData, "observe-data", "{}", "its request as JSON, or @FILE")
	f.StringVar(&o.ObserveField, "observe-field", "", "the integer field of its answer that moves (dotted for nested messages)")
	f.Int64Var(&o.PerExec, "per-exec", 0, "how far the field moves per execution (e.g. -10); default: measured by one plain call first")
	f.StringVar(&o.SlowData, "slow-data", "", "a request of --method whose handler takes --slow-for before it executes, as JSON or @FILE: the deadline and cancel rows send it (default: those rows are n/a)")
	f.DurationVar(&o.SlowFor, "slow-for", 0, "how long --slow-data's handler takes before it executes")
	f.DurationVar(&o.Settle, "settle", 20*time.Millisecond, "how long after each answer the oracle reads, for a handler that executes after answering")
	f.DurationVar(&o.LateWindow, "late-window", 300*time.Millisecond, "how long after each row's last call the oracle reads a last time, for an execution that comes after its answer")
	f.IntVar(&o.Trials, "trials", 0, "how many calls each timeout row makes, one at a time (default 50 at 0n and 1n, 100 from 1u)")
	f.StringVar(&o.Name, "name", "target", "the service's name in the evidence (its column)")
	f.StringVar(&o.Evidence, "evidence", "rpcbench-target", `evidence directory to write ("" for none)`)
	f.StringVar(&o.JSON, "json", "", `also write the results as JSON to this file ("-": stdout, the CASE lines then go to stderr)`)
	o.control.runFlags(cmd)
	return cmd
}

// readData is a --data value: JSON, or @FILE.
func readData(flag, v string) (string, error) {
	if file, ok := strings.CutPrefix(v, "@"); ok {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", usageErrorf("", "%s: %v", flag, err)
		}
		return string(b), nil
	}
	return v, nil
}

func runTarget(ctx context.Context, o *targetOptions) error {
	switch {
	case o.Method == "":
		return usageErrorf("", "target needs --method SERVICE/METHOD: the call to judge")
	case len(o.Protos) > 0 && o.DescriptorSet != "":
		return usageErrorf("", "--proto and --descriptor-set both give the schema: give one")
	case len(o.ImportPaths) > 0 && len(o.Protos) == 0:
		return usageErrorf("", "-I/--import-path is where --proto files are found: give --proto too")
	case (o.ObserveField != "" || o.ObserveData != "{}" || o.PerExec != 0) && o.Observe == "":
		return usageErrorf("", "--observe-field, --observe-data and --per-exec are the observe oracle's: give --observe SERVICE/METHOD too")
	case o.Observe != "" && o.ObserveField == "":
		return usageErrorf("", "--observe needs --observe-field: the integer field of its answer that moves with each execution")
	case (o.SlowData == "") != (o.SlowFor == 0):
		return usageErrorf("", "--slow-data and --slow-for go together: a request whose handler takes that long")
	case o.SlowData != "" && (o.SlowFor < 100*time.Millisecond || o.SlowFor > time.Minute):
		return usageErrorf("", "--slow-for %v: give a duration from 100ms to 1m (the slow rows' deadline and reset come at a quarter of it)", o.SlowFor)
	case o.Trials < 0 || o.Trials > 100000:
		return usageErrorf("", "--trials %d: give a count from 1 to 100000 (0: the rows' own)", o.Trials)
	case o.Settle < 0 || o.Settle > time.Minute:
		return usageErrorf("", "--settle %v: give a duration from 0 to 1m", o.Settle)
	case o.LateWindow < 0 || o.LateWindow > time.Minute:
		return usageErrorf("", "--late-window %v: give a duration from 0 to 1m", o.LateWindow)
	case !stackNameRE.MatchString(o.Name):
		return usageErrorf("", "--name %q: lowercase words joined by - (it names the service's column)", o.Name)
	}
	data, err := readData("--data", o.Data)
	if err != nil {
		return err
	}
	obsData, err := readData("--observe-data", o.ObserveData)
	if err != nil {
		return err
	}
	var sp *serviceProc
	if o.Command != nil {
		// The service's output is copied beside rpcbench's own messages.
		a := *o.app
		a.Out, a.Err = &lockedWriter{w: a.Out}, &lockedWriter{w: a.Err}
		o.app = &a
		fmt.Fprintf(o.Err, "rpcbench: starting %s; waiting for %s\n", strings.Join(o.Command, " "), o.Addr)
		if sp, err = startServiceProc(ctx, o.Command, o.Addr, o.Err); err != nil {
			return err
		}
		defer sp.Close()
	}
	sch, err := loadSchema(ctx, o.Protos, o.ImportPaths, o.DescriptorSet, o.Addr)
	if err != nil {
		return err
	}
	svc := &target.Service{Addr: o.Addr, Name: o.Name, Settle: o.Settle, LateWindow: o.LateWindow, Trials: o.Trials}
	if sp != nil {
		svc.Lifecycle = sp
	}
	if svc.Method, err = sch.Method(o.Method); err != nil {
		return usageErrorf("", "--method: %v", err)
	}
	if svc.Request, err = svc.Method.Request(data); err != nil {
		return usageErrorf("", "--data: %v", err)
	}
	if o.SlowData != "" {
		slow, err := readData("--slow-data", o.SlowData)
		if err != nil {
			return err
		}
		if svc.Slow, err = svc.Method.Request(slow); err != nil {
			return usageErrorf("", "--slow-data: %v", err)
		}
		svc.SlowFor = o.SlowFor
	}
	if o.Observe != "" {
		if svc.Oracle, err = observeOracle(sch, o.Observe, obsData, o.ObserveField, o.PerExec); err != nil {
			return err
		}
	}
	all := scenario.Registry(target.Cases(svc))
	list, err := o.filter(all, all)
	if err != nil {
		return err
	}
	oracle := "none: executions unknown"
	if svc.Oracle != nil && svc.Oracle.PerExec == 0 {
		if _, err := svc.Calibrate(ctx); err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return &errAdapter{fmt.Errorf("target %s: %w", o.Addr, err)}
		}
	}
	if svc.Oracle != nil {
		oracle = svc.Oracle.Describe()
	}
	b := o.control.batch(o.app, list, "")
	b.Evidence = o.Evidence
	b.JSON = o.JSON
	b.Announce = fmt.Sprintf(" judging %s at %s (%s %s; schema: %s; oracle: %s)", o.Name, o.Addr, svc.Method.Name(), idempotency(svc.Method), sch.Source, oracle)
	_, err = runBatch(ctx, b)
	return err
}

// loadSchema reads a service's schema from protos (found in imports),
// or a descriptor set, or, when neither is given, the server reflection
// of the service at addr. What the user gave that cannot be read is a
// usage error; a service whose reflection fails is an ERROR naming it.
func loadSchema(ctx context.Context, protos, imports []string, descSet, addr string) (*schema.Schema, error) {
	var sch *schema.Schema
	var err error
	switch {
	case len(protos) > 0:
		sch, err = schema.FromProto(ctx, imports, protos...)
	case descSet != "":
		sch, err = schema.FromDescriptorSet(descSet)
	default:
		sch, err = schema.FromReflection(ctx, addr)
		if errors.Is(err, schema.ErrNoReflection) {
			return nil, usageErrorf("", "%v: give its schema with --proto or --descriptor-set", err)
		}
		if err != nil {
			return nil, &errAdapter{fmt.Errorf("%s: the schema by server reflection: %w", addr, err)}
		}
	}
	if errors.Is(err, schema.ErrUsage) {
		return nil, usageErrorf("", "%v", err)
	}
	return sch, err
}

// observeOracle is the observe oracle the flags give: method called
// with data, whose integer field moves by perExec (0: to be measured).
func observeOracle(sch *schema.Schema, method, data, field string, perExec int64) (*target.Observe, error) {
	ob := &target.Observe{Field: field, PerExec: perExec}
	var err error
	if ob.Method, err = sch.Method(method); err != nil {
		return nil, usageErrorf("", "--observe: %v", err)
	}
	if ob.Request, err = ob.Method.Request(data); err != nil {
		return nil, usageErrorf("", "--observe-data: %v", err)
	}
	if err := ob.Method.CheckField(field); err != nil {
		return nil, usageErrorf("", "--observe-field: %v", err)
	}
	return ob, nil
}

func idempotency(m schema.Method) string {
	if l := m.Idempotency(); l != "" {
		return l
	}
	return "not marked idempotent"
}
