package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

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

// runBatch runs b's scenarios one after another, b.Count times over, and
// returns their lines. The error wraps errInterrupted when ctx was
// cancelled (the lines so far are still printed, summarized and written),
// is errFailed when a scenario failed in any pass, and is another error
// when output could not be written.
func runBatch(ctx context.Context, b batch) ([]report.Line, error) {
	var ev *report.Evidence
	logDir := ""
	if b.Evidence != "" {
		var err error
		if ev, err = report.CreateEvidence(b.Evidence, report.CollectEnv(ctx)); err != nil {
			return nil, err
		}
		logDir = ev.LogDir()
	}
	p := report.NewPrinter(b.Out, b.Color)
	env := cases.Env{ServerBin: b.ServerBin, LogDir: logDir}
	count := max(b.Count, 1)
	per := len(b.Scenarios)
	status := b.Status
	if status == nil {
		status = io.Discard
	}

	var lines []report.Line
	var writeErr error
	// Each line is written as it completes, so that an interrupted or
	// killed run leaves the passes so far on record.
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
		writeErr = errors.Join(writeErr, report.WriteCounts(b.Out, report.CountByCase(lines)))
		if ev != nil {
			writeErr = errors.Join(writeErr, ev.AddCounts())
		}
	}
	_, err := fmt.Fprintln(b.Out, report.Summary(lines))
	writeErr = errors.Join(writeErr, err)
	if ev != nil {
		writeErr = errors.Join(writeErr, ev.Close())
	}
	if b.JSON != "" {
		writeErr = errors.Join(writeErr, writeJSONFile(b.JSON, lines))
	}

	_, failed := report.Tally(lines)
	switch {
	case ctx.Err() != nil:
		where := ""
		if count > 1 {
			where = fmt.Sprintf(" in run %d/%d", (len(lines)-1)/per+1, count)
		}
		return lines, fmt.Errorf("%w (%v)%s; %d of %d scenarios not run",
			errInterrupted, context.Cause(ctx), where, count*per-len(lines), count*per)
	case writeErr != nil:
		return lines, writeErr
	case failed > 0:
		return lines, errFailed
	}
	return lines, nil
}

func writeJSONFile(path string, lines []report.Line) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = report.WriteJSON(f, lines)
	return errors.Join(err, f.Close())
}
