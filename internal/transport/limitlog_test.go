package transport_test

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/transport"
)

// logBuffer is a log's JSON lines, written and read concurrently.
type logBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// limitCounts returns the counts of the LIMIT events of limit logged so
// far, in order, and fails t on an event without the attribute every
// event must carry.
func (l *logBuffer) limitCounts(t *testing.T, limit string) []int64 {
	t.Helper()
	l.mu.Lock()
	evs, err := serverapi.ReadEvents(bytes.NewReader(l.b.Bytes()))
	l.mu.Unlock()
	if err != nil {
		t.Fatalf("ReadEvents: %v", err)
	}
	var out []int64
	for _, e := range evs {
		if e.Name != serverapi.EventLimit || e.Text(serverapi.KeyLimit) != limit {
			continue
		}
		if e.Text(serverapi.KeyWire) != serverapi.WireGRPC {
			t.Errorf("LIMIT %v without the log's wire=grpc", e)
		}
		n, _ := e.Int(serverapi.KeyCount)
		out = append(out, n)
	}
	return out
}

// TestLimitLog: a limit's first refusal logs LIMIT at once; the ones
// within the interval after it are logged together when it has passed;
// one after a quiet interval logs at once again; Close logs what is
// pending; each limit counts on its own, and each event carries the
// attributes the log was made with.
func TestLimitLog(t *testing.T) {
	const interval = 50 * time.Millisecond
	buf := &logBuffer{}
	l := transport.NewLimitLog(slog.New(slog.NewJSONHandler(buf, nil)), interval, serverapi.KeyWire, serverapi.WireGRPC)
	counts := func(limit string) []int64 { return buf.limitCounts(t, limit) }
	awaitCounts := func(limit string, n int) []int64 {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for len(counts(limit)) < n && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // polling the log: no event to wait on
		}
		return counts(limit)
	}

	l.Note("a")
	if got := counts("a"); len(got) != 1 || got[0] != 1 {
		t.Fatalf("after the first refusal: counts %v, want [1] at once", got)
	}
	l.Note("a")
	l.Note("a")
	l.Note("b")
	if got := counts("a"); len(got) != 1 {
		t.Errorf("within the interval: counts %v, want still [1]", got)
	}
	if got := counts("b"); len(got) != 1 || got[0] != 1 {
		t.Errorf("another limit: counts %v, want [1] at once", got)
	}
	if got := awaitCounts("a", 2); len(got) != 2 || got[1] != 2 {
		t.Errorf("once the interval passed: counts %v, want [1 2]", got)
	}
	time.Sleep(2 * interval) // the quiet interval under test
	l.Note("a")
	if got := counts("a"); len(got) != 3 || got[2] != 1 {
		t.Errorf("after a quiet interval: counts %v, want [1 2 1], the last at once", got)
	}
	l.Note("a")
	l.Close()
	if got := counts("a"); len(got) != 4 || got[3] != 1 {
		t.Errorf("after Close: counts %v, want [1 2 1 1]", got)
	}
	l.Note("a")
	time.Sleep(2 * interval) // no timer may log after Close
	if got := counts("a"); len(got) != 4 {
		t.Errorf("a refusal after Close: counts %v, want nothing more logged", got)
	}
}
