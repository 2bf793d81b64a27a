package report

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// keepReproduced keeps, of the evidence this run replaces, every case the
// run reproduced: one whose new line has the same verdict and the same
// stable fields as its old one (Diff finds no difference), and whose logs
// are files of the same names. Such a case's CASE line and logs in the
// run's files become the old ones, so that a re-run that changed nothing
// stable rewrites env.txt and not a thousand files whose only news is
// their timestamps and ports. It says so in env.txt ("kept: ..."), and
// returns how many it kept. Nothing is kept when the run is Fresh, when
// either run holds a case more than once (--count), or when the old
// output.txt cannot be read as one.
//
// The old logs, bundled or not (ReadLogs), are copied into the run's
// directory: until Commit's renames are done, Dir's evidence stays whole.
func (e *Evidence) keepReproduced() (int, error) {
	if e.Fresh || e.counted {
		return 0, nil
	}
	f, err := os.Open(filepath.Join(e.Dir, OutputFile))
	if err != nil {
		return 0, nil
	}
	old, err := ReadOutput(f)
	f.Close()
	if err != nil || repeats(old) || repeats(e.out.lines) {
		return 0, nil
	}
	changed := map[string]bool{}
	for _, d := range Diff(old, e.out.lines) {
		changed[d.Name] = true
	}
	oldByName := map[string]Line{}
	for _, l := range old {
		oldByName[l.Name] = l
	}
	newLogs := e.LogDir()
	oldContent, err := ReadLogs(filepath.Join(e.Dir, LogsDir))
	if err != nil {
		// Logs that cannot all be read cannot be kept: the run's own
		// take their place.
		return 0, nil
	}
	oldFiles, newFiles := namesByCase(slices.Collect(maps.Keys(oldContent))), logsByCase(newLogs)
	kept := 0
	for i, l := range e.out.lines {
		o, ok := oldByName[l.Name]
		if !ok || changed[l.Name] || !slices.Equal(oldFiles[l.Name], newFiles[l.Name]) {
			continue
		}
		for _, name := range newFiles[l.Name] {
			if err := os.Remove(filepath.Join(newLogs, name)); err != nil {
				return kept, fmt.Errorf("report: evidence: %w", err)
			}
			if err := os.WriteFile(filepath.Join(newLogs, name), oldContent[name], 0o644); err != nil {
				return kept, fmt.Errorf("report: evidence: %w", err)
			}
		}
		e.out.lines[i] = o
		kept++
	}
	if kept == 0 {
		return 0, nil
	}
	// output.txt is rewritten whole: its lines were written as the cases
	// completed.
	if _, err := e.file.Seek(0, io.SeekStart); err != nil {
		return kept, fmt.Errorf("report: evidence: %w", err)
	}
	if err := e.file.Truncate(0); err != nil {
		return kept, fmt.Errorf("report: evidence: %w", err)
	}
	lines := e.out.lines
	e.out = NewOutputWriter(e.file)
	for _, l := range lines {
		if err := e.out.Add(l); err != nil {
			return kept, err
		}
	}
	return kept, e.AddEnv("kept", fmt.Sprintf("%d of %d cases reproduced every stable field of the evidence this run replaced; their CASE lines and logs are those of the earlier run (--fresh writes every one from this run)", kept, len(lines)))
}

// repeats reports whether a case name occurs twice in lines.
func repeats(lines []Line) bool {
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l.Name] {
			return true
		}
		seen[l.Name] = true
	}
	return false
}

// logsByCase lists the files of dir by the case they belong to
// (namesByCase); a missing dir has none.
func logsByCase(dir string) map[string][]string {
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return namesByCase(names)
}

// namesByCase lists file names by the case they belong to (LogCase),
// each list sorted.
func namesByCase(names []string) map[string][]string {
	out := map[string][]string{}
	for _, n := range names {
		if c := LogCase(n); c != "" {
			out[c] = append(out[c], n)
		}
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}
