package serverproc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStderrCopiedPastAFailingWriter: when the writer given for the
// child's stderr fails, the child's stderr is still read to its end, so
// the early-exit message quotes it.
func TestStderrCopiedPastAFailingWriter(t *testing.T) {
	script := filepath.Join(t.TempDir(), "talker")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho first >&2\necho last words >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := StartAwait(t.Context(), Spec{Bin: script, Announce: func(string) (string, error) { return "", nil }, Stderr: failingWriter{}}, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "last words") {
		t.Errorf("got %v, want the early exit to quote the stderr's last line", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }
