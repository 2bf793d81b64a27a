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

	"github.com/rpcbench/rpcbench/internal/leftover"
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
	// Given are adapters the caller has already started once and read
	// the init of (a user's, for judge): their stacks are not looked
	// for among the shipped ones.
	Given []givenAdapter
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
//
// What to do at each turn is decided by functions a test calls with a
// table of situations (batch.check, failFastStop, ending's methods);
// runBatch and batchRun's methods act on their answers.
func runBatch(ctx context.Context, b batch) ([]report.Line, error) {
	r := &batchRun{b: b, count: max(b.Count, 1), per: len(b.Scenarios), status: b.Status}
	if err := b.check(r.count); err != nil {
		return nil, err
	}
	if r.status == nil || b.Events == "-" {
		// gotestsum and its kind count every line on stderr as an error:
		// with the events on stdout, stderr gets errors only.
		r.status = io.Discard
	}
	sweepLeftovers(r.status)
	outs, err := openOutputs(b)
	if err != nil {
		return nil, err
	}
	defer outs.abort()
	if b.Evidence != "" {
		if r.ev, err = report.CreateEvidence(b.Evidence, report.CollectEnv(ctx)); err != nil {
			return nil, evidenceError(b.Evidence, err)
		}
		r.ev.Fresh = b.Fresh
		r.ev.ScenarioOf = scenarioOf(b.Scenarios)
		r.logDir = r.ev.LogDir()
		defer r.ev.Discard() // a no-op once committed or abandoned
	} else {
		// One directory for the whole batch, made now: a temporary
		// directory that cannot be made is a set-up error, not a failure
		// of every scenario.
		dir, err := leftover.MkdirTemp("", "logs")
		if err != nil {
			return nil, fmt.Errorf("temporary directory for server logs (set TMPDIR to a writable directory): %w", err)
		}
		defer os.RemoveAll(dir)
		r.logDir = dir
	}
	pre, err := checkPrereqs(ctx, b.Scenarios, b.ServerBin, r.status, b.Given)
	defer pre.Stop()
	if err != nil {
		return nil, err
	}
	if r.ev != nil {
		for _, s := range pre.Stacks {
			if err := r.ev.AddEnv("stack", s); err != nil {
				return nil, evidenceError(b.Evidence, err)
			}
		}
	}
	if b.Announce != "" {
		fmt.Fprintln(r.status, b.announcement(r.count))
	}
	r.start(outs)
	defer r.prog.close()
	r.runAll(ctx, pre)
	r.prog.close()
	r.finish(ctx, outs)
	return r.lines, r.ended(ctx).err(r.writeErr, r.count, r.per)
}

// check refuses a batch that could never finish, or whose timeout is
// not a bound, before anything is set up: a usage error.
func (b batch) check(count int) error {
	per := len(b.Scenarios)
	if per > 0 && count > maxRuns/per {
		return usageErrorf("", "--count %d runs %d scenarios %d times: more than %d runs", count, per, count, maxRuns)
	}
	if b.Timeout < 0 {
		return usageErrorf("", "--timeout %v: want a duration above 0, or 0 for no bound", b.Timeout)
	}
	return nil
}

// announcement is what a batch with Announce says before it runs.
func (b batch) announcement(count int) string {
	where := "no evidence written"
	if b.Evidence != "" {
		where = "evidence to " + b.Evidence
	}
	times := ""
	if count > 1 {
		times = fmt.Sprintf(" %d times", count)
	}
	return fmt.Sprintf("rpcbench: running %s%s%s, %s", plural(len(b.Scenarios), "scenario"), b.Announce, times, where)
}

// batchRun is one runBatch once it is set up: where it writes, and what
// it has recorded so far.
type batchRun struct {
	b          batch
	count, per int
	// status and out are the status stream and the CASE lines' stream,
	// both wrapped by prog once the run starts.
	status, out io.Writer
	prog        *progress
	printer     *report.Printer
	// short: a line per scenario for a person at a terminal.
	short            bool
	width, nameWidth int
	// ev is the evidence being written, nil for none; logDir holds the
	// scenarios' server logs.
	ev      *report.Evidence
	logDir  string
	json    io.Writer // nil when not asked for, as are junit and events
	junit   io.Writer
	events  *report.EventStream
	info    report.RunInfo
	lines   []report.Line
	results []report.Result
	// writeErr is the first failure to write the run's output; evErr,
	// the evidence's.
	writeErr, evErr error
}

// start sets up the printing of the run to outs.
func (r *batchRun) start(outs *outputs) {
	// On a terminal a person reads: a short line per scenario (without
	// -v) and a live status line, as go test prints; files and pipes get
	// the CASE lines.
	r.short = !r.b.Verbose && report.IsTerminal(outs.human)
	r.prog = newProgress(r.status, report.IsTerminal(r.status), report.TerminalWidth(r.status))
	r.status = r.prog.wrap(r.status)
	r.out = r.prog.wrap(outs.human)
	r.width = report.TerminalWidth(outs.human)
	for _, c := range r.b.Scenarios {
		r.nameWidth = min(max(r.nameWidth, len(c.Name)), 40)
	}
	r.json, r.junit = outs.json, outs.junit
	if outs.events != nil {
		r.events = report.NewEventStream(outs.events)
	}
	r.info = report.RunInfo{Command: os.Args, Version: report.Version(), Start: time.Now()}
	r.printer = report.NewPrinter(r.out, r.b.Color)
}

// runAll runs the scenarios, recording each outcome in run order, until
// all have run, one could not be recorded, --failfast stops the run or
// ctx ends.
func (r *batchRun) runAll(ctx context.Context, pre prereqs) {
	b, total := r.b, r.count*r.per
	env := scenario.Env{ServerBin: b.ServerBin, LogDir: r.logDir, Postgres: pre.Postgres, Adapters: pre.Adapters}
	sched := startScheduler(ctx, total, b.parallelism(r.count),
		func(i int) string { return b.Scenarios[i%r.per].Pool },
		func(ctx context.Context, i int) ran {
			c := b.Scenarios[i%r.per]
			var res ran
			if b.Verbose {
				res.before = logSizes(r.logDir, c.Name)
			}
			res.started = time.Now()
			res.line, res.skipped = pre.instead(c)
			if !res.skipped {
				res.line, res.timedOut = runOne(ctx, c, env, b.Timeout)
			}
			res.took = time.Since(res.started)
			return res
		})
	defer sched.stop()
	for i := range total {
		if r.count > 1 && i%r.per == 0 {
			fmt.Fprintf(r.status, "# run %d/%d\n", i/r.per+1, r.count)
		}
		c := b.Scenarios[i%r.per]
		r.prog.begin(i+1, total, c.Name)
		res, ok := sched.next(i)
		if !ok || !r.record(i, c, res) {
			break
		}
		if stop, notRun := failFastStop(b.FailFast, res.line, i, total); stop {
			if notRun > 0 {
				fmt.Fprintf(r.status, "rpcbench: --failfast: stopping after %s; %s not run\n", c.Name, plural(notRun, "scenario run"))
			}
			break
		}
		sched.done(i)
	}
}

// record records run i of scenario c: in the lines and results, the
// event stream, the evidence and the CASE lines, in that order. It
// returns false when the evidence or the CASE lines could not be
// written, which ends the run.
func (r *batchRun) record(i int, c scenario.Case, res ran) bool {
	line := res.line
	r.lines = append(r.lines, line)
	result := report.Result{Line: line, Group: c.Group, Start: res.started, Duration: res.took, PassIndex: i/r.per + 1, TimedOut: res.timedOut}
	r.results = append(r.results, result)
	if r.events != nil {
		r.events.Begin(c.Group, c.Name, res.started)
		r.events.End(result)
	}
	if r.ev != nil {
		// Before the line is printed: the evidence does not depend on
		// stdout's reader staying.
		if r.evErr = r.ev.Add(line); r.evErr != nil {
			return false
		}
	}
	var err error
	if r.short {
		err = r.printer.PrintShort(line, result.Duration, r.nameWidth, r.width)
	} else {
		err = r.printer.Print(line)
	}
	if err != nil {
		r.writeErr = fmt.Errorf("print result: %w", err)
		return false
	}
	if r.b.Verbose && !res.skipped {
		keep := "the whole log: --evidence DIR keeps it"
		if r.ev != nil {
			keep = "the whole log goes to " + filepath.Join(r.b.Evidence, report.LogsDir) + " once the run completes"
		}
		printVerbose(r.out, r.logDir, c.Name, res.before, keep)
	}
	return true
}

// failFastStop decides, once run i of total has been recorded with
// line, whether the run stops there (--failfast and a failure), and how
// many runs that leaves out. A skipped scenario does not stop it.
func failFastStop(failFast bool, line report.Line, i, total int) (stop bool, notRun int) {
	if !failFast || !line.Failed() {
		return false, 0
	}
	return true, total - i - 1
}

// finish leaves, whatever happened, a consistent record of what did
// run: the per-case counts, the notes, the summary, the evidence
// committed or set aside, and the output files.
func (r *batchRun) finish(ctx context.Context, outs *outputs) {
	if r.count > 1 {
		r.writeErr = errors.Join(r.writeErr, report.WriteCounts(r.out, report.CountByCase(r.lines)))
		if r.ev != nil {
			r.evErr = errors.Join(r.evErr, r.ev.AddCounts())
		}
	}
	// The findings and n/a are named on lines of their own above the
	// summary, on the status stream: a reader of stdout's CASE lines
	// has them there already.
	for _, n := range report.Notes(r.lines) {
		fmt.Fprintln(r.status, "rpcbench: "+n)
	}
	_, err := fmt.Fprintln(r.out, report.Summary(r.lines))
	r.writeErr = errors.Join(r.writeErr, err)
	if r.short && r.ev == nil && len(r.lines) > 0 {
		fmt.Fprintln(r.status, "rpcbench: lines shortened for the terminal; -v or a pipe gives the CASE lines whole")
	}
	end := r.ended(ctx)
	r.writeErr = errors.Join(r.writeErr, r.evErr)
	if r.ev != nil {
		r.settleEvidence(end)
	}
	r.info.End = time.Now()
	if r.json != nil {
		r.writeErr = errors.Join(r.writeErr, report.WriteJSON(r.json, r.info, r.results))
	}
	if r.junit != nil {
		r.writeErr = errors.Join(r.writeErr, report.WriteJUnit(r.junit, r.info, r.results))
	}
	if r.events != nil {
		r.writeErr = errors.Join(r.writeErr, r.events.Close(r.info.End))
	}
	if r.writeErr == nil {
		r.writeErr = outs.commit()
		if r.writeErr == nil && len(outs.files) > 0 {
			fmt.Fprintf(r.status, "rpcbench: wrote %s\n", outs.paths())
		}
	}
}

// settleEvidence does with the evidence what end decides.
func (r *batchRun) settleEvidence(end ending) {
	switch end.evidence() {
	case evidenceCommit:
		if err := r.ev.Commit(); err != nil {
			r.writeErr = errors.Join(r.writeErr, err)
		} else {
			fmt.Fprintf(r.status, "rpcbench: evidence written to %s (%s, %s, %s/)\n", r.b.Evidence, report.OutputFile, report.EnvFile, report.LogsDir)
		}
	case evidenceDiscard:
		r.ev.Discard()
	case evidenceSkipped:
		kept, err := r.ev.Abandon()
		r.writeErr = errors.Join(r.writeErr, err)
		fmt.Fprintf(r.status, "rpcbench: %s skipped on this machine; %s is left as it was, this run's output is in %s until the next run there\n", plural(end.skipped, "scenario"), r.b.Evidence, kept)
	case evidencePartial:
		partial, err := r.ev.Abandon()
		r.writeErr = errors.Join(r.writeErr, err)
		fmt.Fprintf(r.status, "rpcbench: the run did not complete; %s is left as it was, this run's partial output is in %s until the next run there\n", r.b.Evidence, partial)
	}
}

// ending is what a batch knows once its runs have ended, from which the
// fate of its evidence and its error are decided.
type ending struct {
	// cause is why ctx ended, nil when it did not.
	cause error
	// readerGone: ctx ended because stdout's reader went away.
	readerGone bool
	// evErr is the failure to write the evidence, if any.
	evErr error
	// ran is how many runs were recorded, of total.
	ran, total        int
	skipped, failures int
}

// ended is what r knows once its runs have ended.
func (r *batchRun) ended(ctx context.Context) ending {
	e := ending{readerGone: stdoutClosed(ctx), evErr: r.evErr, ran: len(r.lines), total: r.count * r.per}
	if ctx.Err() != nil {
		e.cause = context.Cause(ctx)
	}
	t := report.Tally(r.lines)
	e.skipped, e.failures = t.Skipped, t.Failures()
	return e
}

// complete reports whether every scenario ran and was recorded, whether
// or not stdout's reader stayed to see the last lines.
func (e ending) complete() bool {
	return (e.cause == nil || e.readerGone) && e.evErr == nil && e.ran == e.total
}

// evidenceFate is what becomes of a batch's evidence directory.
type evidenceFate int

const (
	// evidenceCommit: the run replaces the evidence.
	evidenceCommit evidenceFate = iota
	// evidenceDiscard: a partial run whose reader has gone, with nobody
	// left to be told where it is, is thrown away.
	evidenceDiscard
	// evidenceSkipped: a complete run that skipped scenarios proves less
	// than the evidence it would replace, which is left as it was.
	evidenceSkipped
	// evidencePartial: a run that did not complete is set aside, and
	// the evidence left as it was.
	evidencePartial
)

// evidence decides the fate of the evidence directory. Evidence from a
// machine that had what the scenarios need must not give way to SKIP
// lines.
func (e ending) evidence() evidenceFate {
	switch {
	case e.complete() && e.skipped == 0:
		return evidenceCommit
	case e.readerGone:
		return evidenceDiscard
	case e.complete():
		return evidenceSkipped
	}
	return evidencePartial
}

// err is runBatch's error, given writeErr, the failure to write any of
// the output, and the batch's passes and scenarios per pass: it wraps
// errInterrupted when ctx ended, saying where; else it is writeErr; else
// errFailed when a scenario failed or ended in ERROR (rpcbench could not
// establish what happened, which fails a run as a FAIL does). Findings,
// n/a and skipped scenarios do not fail the run.
func (e ending) err(writeErr error, count, per int) error {
	switch {
	case e.cause != nil:
		where := ""
		if count > 1 {
			where = fmt.Sprintf(" in run %d/%d", (e.ran-1)/per+1, count)
		}
		return fmt.Errorf("%w (%w)%s; %d of %s not run",
			errInterrupted, e.cause, where, e.total-e.ran, plural(e.total, "scenario"))
	case writeErr != nil:
		return writeErr
	case e.failures > 0:
		return errFailed
	}
	return nil
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

// scenarioOf returns, for the evidence's bundles, the scenario each of
// cases runs: a judging case's Column.Scenario, so that every column of
// a scenario has its logs in one file.
func scenarioOf(cases []scenario.Case) func(string) string {
	m := map[string]string{}
	for _, c := range cases {
		m[c.Name] = c.Column.Scenario
	}
	return func(name string) string { return m[name] }
}
