package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/outfile"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// batch is one run of scenarios, as all, run and diff start it.
type batch struct {
	Scenarios scenario.Registry
	// Count is how many times the whole of Scenarios runs, one pass after
	// the other; 0 means 1.
	Count     int
	ServerBin string
	// Out receives each CASE line as its scenario completes, then, when
	// Count > 1, the per-case table, then the summary line.
	Out io.Writer
	// Status receives "# run K/N" before each pass when Count > 1; nil
	// discards it.
	Status io.Writer
	Color  report.ColorMode
	// Evidence is the evidence directory to write; "" writes none, and
	// each scenario's server logs go to a temporary directory removed
	// after it. Its output.txt gets what Out gets, without colour.
	Evidence string
	// JSON is the file for the machine-readable results; "" writes none.
	JSON string
	// Timeout bounds each scenario; past it the scenario FAILs naming
	// the timeout, its servers are stopped, and the run goes on. Zero
	// means no bound.
	Timeout time.Duration
	// Fresh: see report.Evidence.Fresh.
	Fresh bool
	// FailFast stops the run after the first scenario that fails; one
	// that is skipped does not stop it.
	FailFast bool
	// Verbose prints, under each CASE line, the scenario's volatile
	// attempt logs and the events its servers logged.
	Verbose bool
	// JUnit is the file for JUnit XML; "" writes none.
	JUnit string
	// Events is the file for the go test -json event stream, "-" for
	// stdout; "" writes none. With "-", nothing but errors goes to
	// Status or Out besides the stream.
	Events string
	// Parallel is how many scenarios may run at once (-p); 0 means 1.
	// Only scenarios of one pool (scenario.Case.Pool) run beside each other;
	// the rest run alone. FailFast and Count > 1 run one at a time.
	Parallel int
	// Announce, when set, has the batch say on Status what it runs once
	// it is set up: "running 26 scenarios" followed by Announce (" of
	// group evidence"), the count and where the evidence goes.
	Announce string
}

// maxRuns bounds Count × len(Scenarios): what a batch could never finish
// is refused before it starts.
const maxRuns = 1_000_000

// runBatch runs b's scenarios one after another, b.Count times over, and
// returns their lines. A scenario whose prerequisite this machine lacks
// (checkPrereqs, once per batch) is not run: it reports SKIP, or FAIL
// when the prerequisite is required, in its place in the run order, and
// is printed and recorded like any other. Output files are opened before
// the first scenario runs, so that a path that cannot be written is an
// error up front. The
// evidence directory is replaced only by a run that completes; an
// interrupted one leaves it as it was and says where its partial output
// went. The error wraps errInterrupted when ctx was cancelled (the lines
// so far are still printed and summarized), is errFailed when a scenario
// failed or ended in ERROR in any pass, and is another error when output
// could not be written or the run could not be set up. Findings, n/a and
// skipped scenarios leave the error nil.
func runBatch(ctx context.Context, b batch) ([]report.Line, error) {
	status := b.Status
	if status == nil {
		status = io.Discard
	}
	count := max(b.Count, 1)
	per := len(b.Scenarios)
	if per > 0 && count > maxRuns/per {
		return nil, usageErrorf("", "--count %d runs %d scenarios %d times: more than %d runs", count, per, count, maxRuns)
	}
	if b.Timeout < 0 {
		return nil, usageErrorf("", "--timeout %v: want a duration above 0, or 0 for no bound", b.Timeout)
	}
	if b.Events == "-" {
		// gotestsum and its kind count every line on stderr as an error:
		// with the events on stdout, stderr gets errors only.
		status = io.Discard
	}
	outs, err := openOutputs(b)
	if err != nil {
		return nil, err
	}
	defer outs.abort()

	var ev *report.Evidence
	var logDir string
	if b.Evidence != "" {
		if ev, err = report.CreateEvidence(b.Evidence, report.CollectEnv(ctx)); err != nil {
			return nil, evidenceError(b.Evidence, err)
		}
		ev.Fresh = b.Fresh
		logDir = ev.LogDir()
		defer ev.Discard() // a no-op once committed or abandoned
	} else {
		// One directory for the whole batch, made now: a temporary
		// directory that cannot be made is a set-up error, not a failure
		// of every scenario.
		dir, err := os.MkdirTemp("", "rpcbench-logs-")
		if err != nil {
			return nil, fmt.Errorf("temporary directory for server logs (set TMPDIR to a writable directory): %w", err)
		}
		defer os.RemoveAll(dir)
		logDir = dir
	}
	pre, err := checkPrereqs(ctx, b.Scenarios, b.ServerBin, status)
	defer pre.Stop()
	if err != nil {
		return nil, err
	}
	if ev != nil {
		for _, s := range pre.Stacks {
			if err := ev.AddEnv("stack", s); err != nil {
				return nil, evidenceError(b.Evidence, err)
			}
		}
	}
	if b.Announce != "" {
		where := "no evidence written"
		if ev != nil {
			where = "evidence to " + b.Evidence
		}
		times := ""
		if count > 1 {
			times = fmt.Sprintf(" %d times", count)
		}
		fmt.Fprintf(status, "rpcbench: running %s%s%s, %s\n", plural(per, "scenario"), b.Announce, times, where)
	}
	// On a terminal a person reads: a short line per scenario (without
	// -v) and a live status line, as go test prints; files and pipes get
	// the CASE lines.
	short := !b.Verbose && report.IsTerminal(outs.human)
	prog := newProgress(status, report.IsTerminal(status), report.TerminalWidth(status))
	defer prog.close()
	status = prog.wrap(status)
	out := prog.wrap(outs.human)
	width, nameWidth := report.TerminalWidth(outs.human), 0
	for _, c := range b.Scenarios {
		nameWidth = min(max(nameWidth, len(c.Name)), 40)
	}
	jsonOut, junitOut := outs.json, outs.junit
	var events *report.EventStream
	if outs.events != nil {
		events = report.NewEventStream(outs.events)
	}
	info := report.RunInfo{Command: os.Args, Version: report.Version(), Start: time.Now()}
	var results []report.Result

	p := report.NewPrinter(out, b.Color)
	env := scenario.Env{ServerBin: b.ServerBin, LogDir: logDir, Postgres: pre.Postgres, Adapters: pre.Adapters}

	var lines []report.Line
	// writeErr is the first failure to write the run's output; evErr,
	// the evidence's.
	var writeErr, evErr error
	parallel := b.parallelism(count)
	sched := startScheduler(ctx, count*per, parallel,
		func(i int) string { return b.Scenarios[i%per].Pool },
		func(ctx context.Context, i int) ran {
			c := b.Scenarios[i%per]
			var r ran
			if b.Verbose {
				r.before = logSizes(logDir, c.Name)
			}
			r.started = time.Now()
			r.line, r.skipped = pre.instead(c)
			if !r.skipped {
				r.line, r.timedOut = runOne(ctx, c, env, b.Timeout)
			}
			r.took = time.Since(r.started)
			return r
		})
	defer sched.stop()
	for i := range count * per {
		if count > 1 && i%per == 0 {
			fmt.Fprintf(status, "# run %d/%d\n", i/per+1, count)
		}
		c := b.Scenarios[i%per]
		prog.begin(i+1, count*per, c.Name)
		r, ok := sched.next(i)
		if !ok {
			break
		}
		line := r.line
		lines = append(lines, line)
		res := report.Result{Line: line, Group: c.Group, Start: r.started, Duration: r.took, PassIndex: i/per + 1, TimedOut: r.timedOut}
		results = append(results, res)
		if events != nil {
			events.Begin(c.Group, c.Name, r.started)
			events.End(res)
		}
		if ev != nil {
			// Before the line is printed: the evidence does not depend on
			// stdout's reader staying.
			if evErr = ev.Add(line); evErr != nil {
				break
			}
		}
		if short {
			err = p.PrintShort(line, res.Duration, nameWidth, width)
		} else {
			err = p.Print(line)
		}
		if err != nil {
			writeErr = fmt.Errorf("print result: %w", err)
			break
		}
		if b.Verbose && !r.skipped {
			keep := "the whole log: --evidence DIR keeps it"
			if ev != nil {
				keep = "the whole log goes to " + filepath.Join(b.Evidence, report.LogsDir) + " once the run completes"
			}
			printVerbose(out, logDir, c.Name, r.before, keep)
		}
		if b.FailFast && line.Failed() {
			if i+1 < count*per {
				fmt.Fprintf(status, "rpcbench: --failfast: stopping after %s; %s not run\n", c.Name, plural(count*per-i-1, "scenario run"))
			}
			break
		}
		sched.done(i)
	}
	sched.stop()

	prog.close()

	// Whatever happened, leave a consistent record of what did run.
	if count > 1 {
		writeErr = errors.Join(writeErr, report.WriteCounts(out, report.CountByCase(lines)))
		if ev != nil {
			evErr = errors.Join(evErr, ev.AddCounts())
		}
	}
	// The findings and n/a are named on lines of their own above the
	// summary, on the status stream: a reader of stdout's CASE lines
	// has them there already.
	for _, n := range report.Notes(lines) {
		fmt.Fprintln(status, "rpcbench: "+n)
	}
	_, err = fmt.Fprintln(out, report.Summary(lines))
	writeErr = errors.Join(writeErr, err)
	if short && ev == nil && len(lines) > 0 {
		fmt.Fprintln(status, "rpcbench: lines shortened for the terminal; -v or a pipe gives the CASE lines whole")
	}
	// The evidence is complete when every scenario ran and was recorded,
	// whether or not stdout's reader stayed to see the last lines.
	complete := (ctx.Err() == nil || stdoutClosed(ctx)) && evErr == nil && len(lines) == count*per
	writeErr = errors.Join(writeErr, evErr)
	totals := report.Tally(lines)
	if ev != nil {
		switch {
		case complete && totals.Skipped == 0:
			if err := ev.Commit(); err != nil {
				writeErr = errors.Join(writeErr, err)
			} else {
				fmt.Fprintf(status, "rpcbench: evidence written to %s (%s, %s, %s/)\n", b.Evidence, report.OutputFile, report.EnvFile, report.LogsDir)
			}
		case stdoutClosed(ctx):
			// A partial run whose reader has gone: nobody is left to be
			// told where it is.
			ev.Discard()
		case complete:
			// A run that skipped scenarios proves less than the evidence
			// it would replace: evidence from a machine that had what
			// they need must not give way to SKIP lines.
			kept, err := ev.Abandon()
			writeErr = errors.Join(writeErr, err)
			fmt.Fprintf(status, "rpcbench: %s skipped on this machine; %s is left as it was, this run's output is in %s until the next run there\n", plural(totals.Skipped, "scenario"), b.Evidence, kept)
		default:
			partial, err := ev.Abandon()
			writeErr = errors.Join(writeErr, err)
			fmt.Fprintf(status, "rpcbench: the run did not complete; %s is left as it was, this run's partial output is in %s until the next run there\n", b.Evidence, partial)
		}
	}
	info.End = time.Now()
	if jsonOut != nil {
		writeErr = errors.Join(writeErr, report.WriteJSON(jsonOut, info, results))
	}
	if junitOut != nil {
		writeErr = errors.Join(writeErr, report.WriteJUnit(junitOut, info, results))
	}
	if events != nil {
		writeErr = errors.Join(writeErr, events.Close(info.End))
	}
	if writeErr == nil {
		writeErr = outs.commit()
		if writeErr == nil && len(outs.files) > 0 {
			fmt.Fprintf(status, "rpcbench: wrote %s\n", outs.paths())
		}
	}

	switch {
	case ctx.Err() != nil:
		where := ""
		if count > 1 {
			where = fmt.Sprintf(" in run %d/%d", (len(lines)-1)/per+1, count)
		}
		return lines, fmt.Errorf("%w (%w)%s; %d of %s not run",
			errInterrupted, context.Cause(ctx), where, count*per-len(lines), plural(count*per, "scenario"))
	case writeErr != nil:
		return lines, writeErr
	case totals.Failures() > 0:
		// An ERROR fails a run as a FAIL does: rpcbench could not
		// establish what happened. Findings, n/a and skipped scenarios do
		// not fail it; interrupted ones end it above.
		return lines, errFailed
	}
	return lines, nil
}

// parallelism is how many scenarios b runs at once: b.Parallel, or 1
// for --failfast (which must start nothing after a failure) and for a
// count of passes (whose runs of one case share its log files).
func (b batch) parallelism(count int) int {
	if b.FailFast || count > 1 {
		return 1
	}
	return max(b.Parallel, 1)
}

// outputs are where a batch writes, opened before anything runs.
type outputs struct {
	// human receives the CASE lines: b.Out, or the status stream when a
	// machine-readable output takes stdout, or nothing when the event
	// stream does (a reader of it counts every other line on stderr as an
	// error, and the stream holds the CASE lines already).
	human io.Writer
	// json, junit and events are nil when not asked for.
	json, junit, events io.Writer
	files               []*outfile.File
}

// openOutputs checks every output path of b and opens those that are
// files. Each machine-readable output goes to stdout for "-" or to a
// file that appears only once it is whole (outfile). A path that cannot
// be written, two outputs on one file, or one on a file the evidence
// directory holds, is a usage error.
func openOutputs(b batch) (_ *outputs, err error) {
	o := &outputs{human: b.Out}
	defer func() {
		if err != nil {
			o.abort()
		}
	}()
	type output struct {
		flag, path string
		w          *io.Writer
	}
	outs := []output{{"json", b.JSON, &o.json}, {"junit", b.JUnit, &o.junit}, {"json-events", b.Events, &o.events}}
	for i, x := range outs {
		if x.path == "" {
			continue
		}
		for _, y := range outs[:i] {
			switch {
			case y.path == "":
			case x.path == "-" && y.path == "-":
				return nil, usageErrorf("", "--%s - and --%s - would both write to stdout; name a file for one of them", y.flag, x.flag)
			case x.path != "-" && y.path != "-" && outfile.Same(x.path, y.path):
				return nil, usageErrorf("", "--%s and --%s both name %s; give each its own file", y.flag, x.flag, filepath.Clean(x.path))
			}
		}
		if x.path != "-" && b.Evidence != "" && report.InEvidence(b.Evidence, x.path) {
			return nil, usageErrorf("", "--%s %s: inside the evidence directory %s, whose %s, %s and %s/ the run replaces; name a file elsewhere",
				x.flag, x.path, b.Evidence, report.OutputFile, report.EnvFile, report.LogsDir)
		}
	}
	for _, x := range outs {
		switch x.path {
		case "":
		case "-":
			*x.w = b.Out
			o.human = b.Status
			if x.flag == "json-events" {
				o.human = nil
			}
		default:
			f, err := outfile.Create(x.path)
			if err != nil {
				return nil, usageErrorf("", "--%s %v", x.flag, err)
			}
			o.files = append(o.files, f)
			*x.w = f
		}
	}
	if o.human == nil {
		o.human = io.Discard
	}
	return o, nil
}

// commit moves every output file into place.
func (o *outputs) commit() error {
	for _, f := range o.files {
		if err := f.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// paths lists the output files, as given.
func (o *outputs) paths() string {
	var ps []string
	for _, f := range o.files {
		ps = append(ps, f.Path())
	}
	return strings.Join(ps, ", ")
}

// abort removes the output files that commit did not move into place.
func (o *outputs) abort() {
	for _, f := range o.files {
		f.Abort()
	}
}

// stdoutClosed reports whether ctx ended because stdout's reader went
// away (closedPipe).
func stdoutClosed(ctx context.Context) bool {
	var se *signalError
	return errors.As(context.Cause(ctx), &se) && se.sig == syscall.SIGPIPE
}
