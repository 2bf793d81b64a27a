package serverproc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTail(t *testing.T) {
	long := strings.Repeat("x", tailMax)
	tests := []struct {
		name   string
		writes []string
		n      int
		want   string
	}{
		{"nothing", nil, 5, ""},
		{"fewer lines than asked", []string{"a\n", "b\n"}, 5, "a\nb"},
		{"last lines only", []string{"a\nb\n", "c\nd"}, 2, "c\nd"},
		{"blank lines at the end dropped", []string{"a\nb\n\n\n"}, 1, "b"},
		{"a line split across writes", []string{"ab", "c\nd", "e\n"}, 2, "abc\nde"},
		{"older bytes dropped", []string{"first\n", long}, 5, long},
		{"one write over the limit", []string{"first\n" + long}, 5, long},
		{"the limit kept exactly", []string{"a\n", long[2:]}, 5, "a\n" + long[2:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tl tail
			for _, w := range tt.writes {
				if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%d bytes): got %d, %v, want %d, nil", len(w), n, err, len(w))
				}
			}
			if got := tl.lines(tt.n); got != tt.want {
				t.Errorf("lines(%d): got %.40q (%d bytes), want %.40q (%d bytes)", tt.n, got, len(got), tt.want, len(tt.want))
			}
			if len(tl.buf) > tailMax {
				t.Errorf("kept %d bytes, want at most %d", len(tl.buf), tailMax)
			}
		})
	}
}

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
