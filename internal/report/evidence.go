package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Names inside an evidence directory.
const (
	OutputFile = "output.txt"
	EnvFile    = "env.txt"
	LogsDir    = "logs"
	// LockFile is held locked by the run that writes the directory.
	LockFile = ".rpcbench.lock"
	// RunPrefix starts the name of the temporary directory a run writes
	// into, inside the evidence directory.
	RunPrefix = ".rpcbench-run-"
)

// ErrLocked is wrapped by CreateEvidence's error when another run holds
// the evidence directory.
var ErrLocked = errors.New("report: evidence directory in use by another run")

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

// Evidence is a run's evidence being written. Everything goes to a
// temporary directory inside the evidence directory DIR, and reaches DIR
// only when the run completes (Commit):
//
//	DIR/output.txt  the CASE lines, the per-case table if AddCounts was
//	                called, then the summary line
//	DIR/env.txt     where the run happened (see Env)
//	DIR/logs/       the logs of each scenario, bundled (SCENARIO.logs:
//	                see ReadLogs): server-<case>.log for each server
//	                started, the adapters' stderr, the clients' traces
//
// So a run that is interrupted, killed or fails to write leaves DIR's
// previous evidence as it was (Abandon says where its partial output
// went), and DIR never holds a truncated output.txt. Other files in DIR
// are never touched. While an Evidence is open it holds DIR's lock, so
// two runs cannot write one directory.
type Evidence struct {
	Dir string
	// Fresh makes Commit write every case from this run, keeping none
	// that reproduced the evidence it replaces (see keepReproduced).
	Fresh bool
	// ScenarioOf names the scenario whose bundle a case's logs go in
	// (writeBundles): the scenario a judging case runs in one of its
	// columns. Nil, or "", is the case's own name.
	ScenarioOf func(caseName string) string
	tmp        string
	lock       *os.File
	file       *os.File
	out        *OutputWriter
	// ended is set by Commit, Abandon and Discard, after which the others
	// do nothing.
	ended bool
	// counted is set by AddCounts: a run that repeats its cases.
	counted bool
}

// CreateEvidence locks dir (creating it if need be) and starts a run's
// evidence in a fresh temporary directory inside it, with env.txt
// written. Its error wraps ErrLocked when another run holds dir.
func CreateEvidence(dir string, env Env) (ev *Evidence, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: evidence: %w", err)
	}
	lock, err := lockDir(filepath.Join(dir, LockFile))
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	tmp, err := os.MkdirTemp(dir, RunPrefix)
	if err != nil {
		return nil, fmt.Errorf("report: evidence: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Mkdir(filepath.Join(tmp, LogsDir), 0o755); err != nil {
		return nil, fmt.Errorf("report: evidence: %w", err)
	}
	if err := writeFile(filepath.Join(tmp, EnvFile), env.WriteTo); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(tmp, OutputFile))
	if err != nil {
		return nil, fmt.Errorf("report: evidence: %w", err)
	}
	return &Evidence{Dir: dir, tmp: tmp, lock: lock, file: f, out: NewOutputWriter(f)}, nil
}

func writeFile(path string, write func(io.Writer) (int64, error)) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: evidence: %w", err)
	}
	_, err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("report: evidence: write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// LogDir is the directory for server logs, to pass as cases.Env.LogDir.
func (e *Evidence) LogDir() string { return filepath.Join(e.tmp, LogsDir) }

// Add appends l to output.txt.
func (e *Evidence) Add(l Line) error { return e.out.Add(l) }

// AddEnv appends a "key: value" line to env.txt, for what a run learns
// of its machine after it started (the adapters' stacks and versions).
func (e *Evidence) AddEnv(key, value string) error {
	f, err := os.OpenFile(filepath.Join(e.tmp, EnvFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("report: evidence: %w", err)
	}
	_, err = fmt.Fprintf(f, "%s: %s\n", key, value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("report: evidence: write %s: %w", EnvFile, err)
	}
	return nil
}

// AddCounts appends the per-case table of the lines added so far to
// output.txt.
func (e *Evidence) AddCounts() error {
	e.counted = true
	return e.out.AddCounts()
}

// finish writes the summary line and closes output.txt.
func (e *Evidence) finish() error {
	err := e.out.Finish()
	if serr := e.file.Sync(); err == nil {
		err = serr
	}
	return errors.Join(err, e.file.Close())
}

// Commit writes the summary line and moves the run's files into Dir:
// env.txt, then logs/, then output.txt last, each by one rename, so that
// Dir's output.txt is always a complete one. Before that it keeps the
// cases this run reproduced as they were (keepReproduced), unless Fresh,
// cuts each log to MaxLogBytes (CutLog) and bundles the logs by scenario
// (writeBundles). It releases the lock. If it
// fails, the run's files stay in the temporary directory its error names.
func (e *Evidence) Commit() error {
	if e.ended {
		return nil
	}
	e.ended = true
	defer e.lock.Close()
	e.pruneEarlier()
	// Logs are cut to MaxLogBytes once the cases a re-run reproduced have
	// taken their old files back: one an earlier run left whole, or cut
	// under a larger limit, is cut too (its copy: the old evidence stays
	// as it was until the renames below).
	_, err := e.keepReproduced()
	if err == nil {
		err = cutLogs(e.LogDir())
	}
	if err == nil {
		err = writeBundles(e.LogDir(), e.ScenarioOf)
	}
	if err = errors.Join(err, e.finish()); err != nil {
		return fmt.Errorf("%w (partial run in %s)", err, e.tmp)
	}
	oldLogs := filepath.Join(e.tmp, "old-"+LogsDir)
	steps := []struct{ from, to string }{
		{filepath.Join(e.tmp, EnvFile), filepath.Join(e.Dir, EnvFile)},
		{filepath.Join(e.Dir, LogsDir), oldLogs},
		{filepath.Join(e.tmp, LogsDir), filepath.Join(e.Dir, LogsDir)},
		{filepath.Join(e.tmp, OutputFile), filepath.Join(e.Dir, OutputFile)},
	}
	for _, s := range steps {
		if err := os.Rename(s.from, s.to); err != nil && !(s.to == oldLogs && errors.Is(err, os.ErrNotExist)) {
			return fmt.Errorf("report: evidence: %w (the run's files are in %s)", err, e.tmp)
		}
	}
	if err := os.RemoveAll(e.tmp); err != nil {
		return fmt.Errorf("report: evidence: remove %s: %w", e.tmp, err)
	}
	return nil
}

// Abandon writes the summary of what did run, leaves Dir's previous
// evidence untouched and releases the lock. It returns the directory that
// holds the partial run, which the caller reports; the next run in Dir
// removes it.
func (e *Evidence) Abandon() (string, error) {
	if e.ended {
		return e.tmp, nil
	}
	e.ended = true
	defer e.lock.Close()
	e.pruneEarlier()
	return e.tmp, e.finish()
}

// pruneEarlier removes the temporary directories earlier runs left in
// Dir (an interrupted run's partial output, which it said was kept until
// the next run there), once this run has run. Holding the lock, it
// cannot remove one in use: the lock is a run's while it runs. A
// directory that cannot be removed is left for the next run.
func (e *Evidence) pruneEarlier() {
	stale, _ := filepath.Glob(filepath.Join(e.Dir, RunPrefix+"*"))
	for _, d := range stale {
		if d != e.tmp {
			os.RemoveAll(d)
		}
	}
}

// Discard removes the run's temporary directory and releases the lock,
// for a run that ends before its first scenario. After Commit or Abandon
// it does nothing.
func (e *Evidence) Discard() {
	if e.ended {
		return
	}
	e.ended = true
	e.file.Close()
	os.RemoveAll(e.tmp)
	e.lock.Close()
}

// InEvidence reports whether path is one of the files a run replaces in
// the evidence directory dir: its output.txt, its env.txt, or anything in
// its logs/.
func InEvidence(dir, path string) bool {
	d, err1 := filepath.Abs(dir)
	p, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(rel, string(filepath.Separator))
	return rel == OutputFile || rel == EnvFile || first == LogsDir
}
