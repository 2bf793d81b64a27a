package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/internal/report"
)

// The committed evidence's budget: it lives in git, and every run that
// regenerates it adds to the clone of everyone who reads it. The release
// matrix (evidence/matrix, about 4.5 MB: 16 releases' cases and their
// logs) took it from 10 MiB to 14.
const (
	evidenceMaxBytes = 14 << 20
	evidenceMaxFile  = 1 << 20
)

// TestEvidenceBudget: the committed evidence/ holds no file over 1 MiB
// and is under 14 MiB in all; each log in a logs/ belongs to a case of
// the output.txt beside it, so that a re-run can tell whose it is
// (report.LogCase) and keep it when that case did not change.
func TestEvidenceBudget(t *testing.T) {
	root := filepath.Join("..", "..", "evidence")
	var total int64
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), report.RunPrefix) {
				return filepath.SkipDir // a local run's leftovers, not committed
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		total += fi.Size()
		if fi.Size() > evidenceMaxFile {
			t.Errorf("%s: %d bytes, over %d: a log past report.MaxLogBytes is cut when a run commits it; regenerate its group", path, fi.Size(), evidenceMaxFile)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total > evidenceMaxBytes {
		t.Errorf("evidence/ holds %d bytes, over %d", total, evidenceMaxBytes)
	}
	outputs, _ := filepath.Glob(filepath.Join(root, "*", report.OutputFile))
	outputs = append(outputs, filepath.Join(root, report.OutputFile))
	for _, out := range outputs {
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := report.ReadOutput(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		names := map[string]bool{}
		for _, l := range lines {
			names[l.Name] = true
		}
		entries, _ := os.ReadDir(filepath.Join(filepath.Dir(out), report.LogsDir))
		for _, e := range entries {
			if c := report.LogCase(e.Name()); !names[c] {
				t.Errorf("%s: belongs to no case of %s (LogCase gives %q)", filepath.Join(filepath.Dir(out), report.LogsDir, e.Name()), out, c)
			}
		}
	}
}
