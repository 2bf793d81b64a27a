package leftover

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSweep: Sweep removes the directories of gone owners, its own
// stale pid included, and nothing else: not a live owner's, not one in
// another space, not a file, not a name without an owner.
func TestSweep(t *testing.T) {
	me := selfOwner(t)
	pid, start := exited(t, true)
	dead := Owner{me.Space, pid, start}
	reused := Owner{me.Space, me.PID, me.Start + 1}
	elsewhere := Owner{"00000000", pid, start}
	dir := t.TempDir()
	mkdir := func(name string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mine, err := MkdirTemp(dir, "live")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := Parse(filepath.Base(mine), "-"); !ok || o != me {
		t.Fatalf("MkdirTemp made %s, which names %+v, %v; want %+v", mine, o, ok, me)
	}
	mkdir(dead.Name("-") + "case-1")
	mkdir(reused.Name("-") + "pgcluster-2")
	if err := os.MkdirAll(filepath.Join(dir, dead.Name("-")+"deep-3", "data", "base"), 0o700); err != nil {
		t.Fatal(err)
	}
	mkdir(elsewhere.Name("-") + "case-4")
	mkdir("rpcbench-logs-5")
	if err := os.WriteFile(filepath.Join(dir, dead.Name("-")+"file-6"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	removed, err := Sweep(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range []string{dead.Name("-") + "case-1", reused.Name("-") + "pgcluster-2", dead.Name("-") + "deep-3"} {
		want = append(want, filepath.Join(dir, n))
	}
	slices.Sort(want)
	slices.Sort(removed)
	if !slices.Equal(removed, want) {
		t.Errorf("Sweep removed %v\nwant %v", removed, want)
	}
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	wantLeft := []string{filepath.Base(mine), elsewhere.Name("-") + "case-4", "rpcbench-logs-5", dead.Name("-") + "file-6"}
	slices.Sort(wantLeft)
	if !slices.Equal(left, wantLeft) {
		t.Errorf("left %v\nwant %v", left, wantLeft)
	}
}

func TestReport(t *testing.T) {
	var b bytes.Buffer
	Report(&b, "x", nil, nil)
	if b.Len() != 0 {
		t.Errorf("nothing removed: wrote %q, want nothing", b.String())
	}
	Report(&b, "x", []string{"/tmp/a", "database b"}, nil)
	if got, want := b.String(), "x: removed what killed runs left: /tmp/a, database b\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	b.Reset()
	Report(&b, "x", nil, os.ErrPermission)
	if got := b.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "permission denied") {
		t.Errorf("error: got %q, want one line with it", got)
	}
}
