//go:build unix

package main

import (
	"os"
	"syscall"
	"testing"

	"github.com/rpcbench/rpcbench/internal/cases"
)

// TestOutputFilesHonourUmask: --json, --junit and --json-events files are
// as readable as the evidence (0644 under umask 022), so that a CI
// uploader running as another user can read them.
func TestOutputFilesHonourUmask(t *testing.T) {
	var r fakeRuns
	a, _, _ := testApp(t, r.fake("one", cases.GroupEvidence, true))
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	if code, errText := command(a, "run", "one", "--json", "r.json", "--junit", "r.xml", "--json-events", "r.events"); code != exitOK {
		t.Fatalf("exit %d: %s", code, errText)
	}
	for _, name := range []string{"r.json", "r.xml", "r.events"} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o644 {
			t.Errorf("%s: mode %v, want -rw-r--r--", name, got)
		}
	}
}
