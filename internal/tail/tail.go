// Package tail keeps the end of what a child process writes to its
// stderr, to quote when it misbehaves.
package tail

import (
	"strings"
	"sync"
)

// Max bounds what a Buffer keeps: a fixed cost for a process that writes
// without end, and more than a few lines of any reasonable length.
const Max = 4 << 10

// Buffer keeps the last Max bytes written to it. It is safe for
// concurrent use; the zero Buffer is empty and ready.
type Buffer struct {
	mu  sync.Mutex // guards buf
	buf []byte
}

// Write keeps the end of p; it never fails.
func (t *Buffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(p) >= Max {
		t.buf = append(t.buf[:0], p[len(p)-Max:]...)
		return len(p), nil
	}
	if over := len(t.buf) + len(p) - Max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

// Lines returns the last n lines kept, without the final newline; the
// first may be cut short.
func (t *Buffer) Lines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimRight(string(t.buf), "\n")
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			if n--; n == 0 {
				return s[i+1:]
			}
		}
	}
	return s
}
