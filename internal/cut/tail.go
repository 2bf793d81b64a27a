package cut

import (
	"strings"
	"sync"
)

// stderrLines is how many of its last stderr lines an *Error quotes.
const stderrLines = 20

// tailMax bounds the stderr kept: a fixed cost for an adapter that
// writes without end.
const tailMax = 4 << 10

// tail keeps the last tailMax bytes written to it. It is the same rule
// as serverproc's, for a different process.
type tail struct {
	mu  sync.Mutex // guards buf
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(p) >= tailMax {
		t.buf = append(t.buf[:0], p[len(p)-tailMax:]...)
		return len(p), nil
	}
	if over := len(t.buf) + len(p) - tailMax; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

// lines returns the last n lines kept, without the final newline; the
// first may be cut short.
func (t *tail) lines(n int) string {
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
