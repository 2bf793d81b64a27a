package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

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
}

// maxRuns bounds Count × len(Scenarios): what a batch could never finish
// is refused before it starts.
const maxRuns = 1_000_000

// runBatch runs b's scenarios one after another, b.Count times over, and
// returns their lines. Output files are opened before the first scenario
// runs, so that a path that cannot be written is an error up front. The
// evidence directory is replaced only by a run that completes; an
// interrupted one leaves it as it was and says where its partial output
// went. The error wraps errInterrupted when ctx was cancelled (the lines
// so far are still printed and summarized), is errFailed when a scenario
// failed in any pass, and is another error when output could not be
// written or the run could not be set up.
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
	scenarios, pg, stopPG, err := postgresFor(ctx, b.Scenarios, status)
	if err != nil {
		return nil, err
	}
	defer stopPG()
	b.Scenarios, per = scenarios, len(scenarios)
	out, jsonOut := b.Out, io.Writer(nil)
	var jsonFile *pendingFile
	switch b.JSON {
	case "":
	case "-":
		// JSON takes stdout; the CASE lines go to the status stream.
		out, jsonOut = b.Status, b.Out
	default:
		var err error
		if jsonFile, err = createPending(b.JSON); err != nil {
			return nil, usageErrorf("", "--json %s: %v", b.JSON, err)
		}
		defer jsonFile.abort()
		jsonOut = jsonFile
	}
	if out == nil {
		out = io.Discard
	}

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
	env := cases.Env{ServerBin: b.ServerBin, LogDir: logDir, Postgres: pg}

	var lines []report.Line
	var writeErr error
	for i := range count * per {
		if ctx.Err() != nil {
			break
		}
		if count > 1 && i%per == 0 {
			fmt.Fprintf(status, "# run %d/%d\n", i/per+1, count)
		}
		line := b.Scenarios[i%per].Run(ctx, env)
		lines = append(lines, line)
		if err := p.Print(line); err != nil {
			writeErr = fmt.Errorf("print result: %w", err)
			break
		}
		if ev != nil {
			if writeErr = ev.Add(line); writeErr != nil {
				break
			}
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
	if ev != nil {
		if complete {
			writeErr = errors.Join(writeErr, ev.Commit())
		} else {
			partial, err := ev.Abandon()
			writeErr = errors.Join(writeErr, err)
			fmt.Fprintf(status, "rpcbench: the run did not complete; %s is left as it was, this run's partial output is in %s\n", b.Evidence, partial)
		}
	}
	if jsonOut != nil {
		writeErr = errors.Join(writeErr, report.WriteJSON(jsonOut, lines))
		if jsonFile != nil && writeErr == nil {
			writeErr = jsonFile.commit()
		}
	}

	_, failed, _ := report.Tally(lines)
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
	case failed > 0:
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
