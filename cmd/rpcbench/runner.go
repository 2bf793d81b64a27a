package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rpcbench/rpcbench/internal/cases"
	"github.com/rpcbench/rpcbench/internal/report"
)

// batch is one run of scenarios, as all, run and diff start it.
type batch struct {
	Scenarios cases.Registry
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
	// FailFast stops the run after the first scenario that fails; one
	// that is skipped does not stop it.
	FailFast bool
	// Verbose prints, under each CASE line, the scenario's volatile
	// attempt logs and the events its servers logged.
	Verbose bool
	// JUnit is the file for JUnit XML; "" writes none.
	JUnit string
	// Events is the file for the go test -json event stream, "-" for
	// stdout; "" writes none.
	Events string
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
// failed in any pass, and is another error when output could not be
// written or the run could not be set up. Skipped scenarios alone leave
// the error nil.
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
	if b.JSON == "-" && b.Events == "-" {
		return nil, usageErrorf("", "--json - and --json-events - would both write to stdout; name a file for one of them")
	}
	pre, err := checkPrereqs(ctx, b.Scenarios, status)
	defer pre.Stop()
	if err != nil {
		return nil, err
	}
	out := b.Out
	// Each machine-readable output goes to stdout for "-", the CASE
	// lines then to the status stream, or to a file that appears only
	// once it is whole.
	var pending []*pendingFile
	defer func() {
		for _, p := range pending {
			p.abort()
		}
	}()
	open := func(flag, path string) (io.Writer, *pendingFile, error) {
		switch path {
		case "":
			return nil, nil, nil
		case "-":
			out = b.Status
			return b.Out, nil, nil
		}
		p, err := createPending(path)
		if err != nil {
			return nil, nil, usageErrorf("", "--%s %s: %v", flag, path, err)
		}
		pending = append(pending, p)
		return p, p, nil
	}
	jsonOut, jsonFile, err := open("json", b.JSON)
	if err != nil {
		return nil, err
	}
	junitOut, junitFile, err := open("junit", b.JUnit)
	if err != nil {
		return nil, err
	}
	eventsOut, eventsFile, err := open("json-events", b.Events)
	if err != nil {
		return nil, err
	}
	var events *report.EventStream
	if eventsOut != nil {
		events = report.NewEventStream(eventsOut)
	}
	if out == nil {
		out = io.Discard
	}
	info := report.RunInfo{Command: os.Args, Version: report.Version(), Start: time.Now()}
	var results []report.Result

	var ev *report.Evidence
	var logDir string
	if b.Evidence != "" {
		var err error
		if ev, err = report.CreateEvidence(b.Evidence, report.CollectEnv(ctx)); err != nil {
			if errors.Is(err, report.ErrLocked) {
				return nil, fmt.Errorf("%w; wait for it to finish, or name another directory with --evidence", err)
			}
			return nil, err
		}
		logDir = ev.LogDir()
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
	p := report.NewPrinter(out, b.Color)
	env := cases.Env{ServerBin: b.ServerBin, LogDir: logDir, Postgres: pre.Postgres}

	var lines []report.Line
	var writeErr error
	for i := range count * per {
		if ctx.Err() != nil {
			break
		}
		if count > 1 && i%per == 0 {
			fmt.Fprintf(status, "# run %d/%d\n", i/per+1, count)
		}
		c := b.Scenarios[i%per]
		var before map[string]int64
		if b.Verbose {
			before = logSizes(logDir, c.Name)
		}
		started := time.Now()
		if events != nil {
			events.Begin(c.Group, c.Name, started)
		}
		line, skipped := pre.instead(c)
		timedOut := false
		if !skipped {
			line, timedOut = runOne(ctx, c, env, b.Timeout)
		}
		lines = append(lines, line)
		res := report.Result{Line: line, Group: c.Group, Start: started, Duration: time.Since(started), PassIndex: i/per + 1, TimedOut: timedOut}
		results = append(results, res)
		if events != nil {
			events.End(res)
		}
		if err := p.Print(line); err != nil {
			writeErr = fmt.Errorf("print result: %w", err)
			break
		}
		if b.Verbose && !skipped {
			printVerbose(out, line, logDir, c.Name, before)
		}
		if ev != nil {
			if writeErr = ev.Add(line); writeErr != nil {
				break
			}
		}
		if b.FailFast && line.Failed() {
			if i+1 < count*per {
				fmt.Fprintf(status, "rpcbench: --failfast: stopping after %s; %d scenario runs not run\n", c.Name, count*per-i-1)
			}
			break
		}
	}

	// Whatever happened, leave a consistent record of what did run.
	if count > 1 {
		writeErr = errors.Join(writeErr, report.WriteCounts(out, report.CountByCase(lines)))
		if ev != nil {
			writeErr = errors.Join(writeErr, ev.AddCounts())
		}
	}
	_, err = fmt.Fprintln(out, report.Summary(lines))
	writeErr = errors.Join(writeErr, err)
	complete := ctx.Err() == nil && writeErr == nil && len(lines) == count*per
	totals := report.Tally(lines)
	if ev != nil {
		switch {
		case complete && totals.Skipped == 0:
			writeErr = errors.Join(writeErr, ev.Commit())
		case complete:
			// A run that skipped scenarios proves less than the evidence
			// it would replace: evidence from a machine that had what
			// they need must not give way to SKIP lines.
			kept, err := ev.Abandon()
			writeErr = errors.Join(writeErr, err)
			fmt.Fprintf(status, "rpcbench: %d scenarios skipped on this machine; %s is left as it was, this run's output is in %s\n", totals.Skipped, b.Evidence, kept)
		default:
			partial, err := ev.Abandon()
			writeErr = errors.Join(writeErr, err)
			fmt.Fprintf(status, "rpcbench: the run did not complete; %s is left as it was, this run's partial output is in %s\n", b.Evidence, partial)
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
	for _, p := range []*pendingFile{jsonFile, junitFile, eventsFile} {
		if p != nil && writeErr == nil {
			writeErr = p.commit()
		}
	}

	switch {
	case ctx.Err() != nil:
		where := ""
		if count > 1 {
			where = fmt.Sprintf(" in run %d/%d", (len(lines)-1)/per+1, count)
		}
		return lines, fmt.Errorf("%w (%w)%s; %d of %d scenarios not run",
			errInterrupted, context.Cause(ctx), where, count*per-len(lines), count*per)
	case writeErr != nil:
		return lines, writeErr
	case totals.Failed > 0:
		// Skipped scenarios do not fail a run; interrupted ones end it
		// above.
		return lines, errFailed
	}
	return lines, nil
}

// pendingFile is an output file written to a temporary file next to its
// path and renamed into place by commit, so that a failed run never
// leaves a half-written one and a path that cannot be written is found
// before anything runs.
type pendingFile struct {
	*os.File
	path string
	done bool
}

func createPending(path string) (*pendingFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return nil, err
	}
	return &pendingFile{File: f, path: path}, nil
}

func (p *pendingFile) commit() error {
	err := p.Sync()
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(p.Name(), p.path)
	}
	p.done = err == nil
	return err
}

// abort removes the temporary file unless commit renamed it.
func (p *pendingFile) abort() {
	if !p.done {
		p.Close()
		os.Remove(p.Name())
	}
}
