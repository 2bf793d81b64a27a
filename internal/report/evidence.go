package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Names inside an evidence directory.
const (
	OutputFile = "output.txt"
	EnvFile    = "env.txt"
	LogsDir    = "logs"
)

// OutputWriter writes the content of an output.txt: one CASE line per
// Add, optionally the per-case table on AddCounts, then the summary line on
// Finish. Each Add performs one Write, so a reader of the file sees whole
// lines as cases complete.
type OutputWriter struct {
	w     io.Writer
	lines []Line
}

// NewOutputWriter returns an OutputWriter writing to w.
func NewOutputWriter(w io.Writer) *OutputWriter { return &OutputWriter{w: w} }

// Add writes l as one CASE line.
func (o *OutputWriter) Add(l Line) error {
	o.lines = append(o.lines, l)
	if _, err := io.WriteString(o.w, Format(l)+"\n"); err != nil {
		return fmt.Errorf("report: write output: %w", err)
	}
	return nil
}

// AddCounts writes the per-case table (WriteCounts) of every line added
// so far. A run that repeats its cases calls it once, before Finish.
func (o *OutputWriter) AddCounts() error {
	return WriteCounts(o.w, CountByCase(o.lines))
}

// Finish writes the summary line of every line added.
func (o *OutputWriter) Finish() error {
	if _, err := io.WriteString(o.w, Summary(o.lines)+"\n"); err != nil {
		return fmt.Errorf("report: write output: %w", err)
	}
	return nil
}

// Evidence is an evidence directory being written:
//
//	DIR/output.txt  the CASE lines as they complete, the per-case table
//	                if AddCounts was called, then the summary line
//	DIR/env.txt     where the run happened (see Env)
//	DIR/logs/       server-<case>.log, one per server started
//
// An interrupted run still leaves an output.txt that ends in a summary of
// the cases that completed, provided Close is called.
type Evidence struct {
	Dir  string
	file *os.File
	out  *OutputWriter
}

// CreateEvidence prepares dir (creating it if need be): it removes the
// server-*.log files a previous run left in DIR/logs, writes env.txt with
// env, and truncates output.txt. Other files in dir are left alone.
func CreateEvidence(dir string, env Env) (*Evidence, error) {
	logs := filepath.Join(dir, LogsDir)
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, fmt.Errorf("report: evidence: %w", err)
	}
	old, err := filepath.Glob(filepath.Join(logs, "server-*.log"))
	if err != nil {
		return nil, fmt.Errorf("report: evidence: %w", err)
	}
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return nil, fmt.Errorf("report: evidence: clear old log: %w", err)
		}
	}
	envFile, err := os.Create(filepath.Join(dir, EnvFile))
	if err != nil {
		return nil, fmt.Errorf("report: evidence: %w", err)
	}
	_, err = env.WriteTo(envFile)
	if cerr := envFile.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("report: evidence: write %s: %w", EnvFile, err)
	}
	f, err := os.Create(filepath.Join(dir, OutputFile))
	if err != nil {
		return nil, fmt.Errorf("report: evidence: %w", err)
	}
	return &Evidence{Dir: dir, file: f, out: NewOutputWriter(f)}, nil
}

// LogDir is the directory for server logs, to pass as cases.Env.LogDir.
func (e *Evidence) LogDir() string { return filepath.Join(e.Dir, LogsDir) }

// Add appends l to output.txt.
func (e *Evidence) Add(l Line) error { return e.out.Add(l) }

// AddCounts appends the per-case table of the lines added so far to
// output.txt.
func (e *Evidence) AddCounts() error { return e.out.AddCounts() }

// Close writes the summary line to output.txt and closes it.
func (e *Evidence) Close() error {
	err := e.out.Finish()
	return errors.Join(err, e.file.Close())
}
