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
// regenerates it adds to the clone of everyone who reads it. It is held
// twice: by the bytes the files hold, and by the disk a checkout spends
// on them in 4 KiB blocks (what du shows), which a thousand small logs
// would fill although their bytes fit; logs are bundled by scenario for
// that (report.ReadLogs).
const (
	evidenceMaxBytes = 10 << 20
	evidenceMaxDisk  = 10 << 20
	evidenceMaxFile  = 1 << 20
	diskBlock        = 4 << 10
)

// TestEvidenceBudget: the committed evidence/ holds no file over 1 MiB
// and is under 10 MiB in all, in bytes and on disk; each log in a logs/
// belongs to a case of the output.txt beside it, so that a re-run can
// tell whose it is (report.LogCase) and keep it when that case did not
// change.
func TestEvidenceBudget(t *testing.T) {
	root := filepath.Join("..", "..", "evidence")
	var total, disk int64
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
		disk += (fi.Size() + diskBlock - 1) / diskBlock * diskBlock
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
	if disk > evidenceMaxDisk {
		t.Errorf("evidence/ takes %d bytes of %d-byte blocks, over %d: small files each spend a block", disk, diskBlock, evidenceMaxDisk)
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
		logs, err := report.ReadLogs(filepath.Join(filepath.Dir(out), report.LogsDir))
		if err != nil {
			t.Errorf("%s: %v", out, err)
		}
		for name := range logs {
			if c := report.LogCase(name); !names[c] {
				t.Errorf("%s: %s belongs to no case of %s (LogCase gives %q)", filepath.Join(filepath.Dir(out), report.LogsDir), name, out, c)
			}
		}
	}
}
