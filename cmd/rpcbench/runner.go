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
	Scenarios []scenario
	ServerBin string
	// Out receives each CASE line as its scenario completes, then the
	// summary line.
	Out   io.Writer
	Color report.ColorMode
	// Evidence is the evidence directory to write; "" writes none, and
	// each scenario's server logs go to a temporary directory removed
	// after it.
	Evidence string
	// JSON is the file for the machine-readable results; "" writes none.
	JSON string
}

// runBatch runs b's scenarios one after another and returns their lines.
// The error wraps errInterrupted when ctx was cancelled (the lines so far
// are still printed, summarized and written), is errFailed when a
// scenario failed, and is another error when output could not be written.
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

	var lines []report.Line
	var writeErr error
	for _, s := range b.Scenarios {
		if ctx.Err() != nil {
			break
		}
		line := s.Run(ctx, env)
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
		return lines, fmt.Errorf("%w (%v); %d of %d scenarios not run",
			errInterrupted, context.Cause(ctx), len(b.Scenarios)-len(lines), len(b.Scenarios))
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
