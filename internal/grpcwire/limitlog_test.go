package grpcwire

import (
	"log/slog"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// TestLimitLog: a limit's first refusal logs LIMIT at once; the ones
// within the interval after it are logged together when it has passed;
// one after a quiet interval logs at once again; close logs what is
// pending; each limit counts on its own, and each event carries the
// attributes the log was made with.
func TestLimitLog(t *testing.T) {
	const interval = 50 * time.Millisecond
	buf := &syncBuffer{}
	l := newLimitLog(slog.New(slog.NewJSONHandler(buf, nil)), interval, serverapi.KeyWire, serverapi.WireGRPC)
	ts := &testServer{log: buf}
	counts := func(limit string) []int64 { return ts.limitCounts(t, limit) }
	awaitCounts := func(limit string, n int) []int64 {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for len(counts(limit)) < n && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // polling the log: no event to wait on
		}
		return counts(limit)
	}

	l.note("a")
	if got := counts("a"); len(got) != 1 || got[0] != 1 {
		t.Fatalf("after the first refusal: counts %v, want [1] at once", got)
	}
	l.note("a")
	l.note("a")
	l.note("b")
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
	l.note("a")
	if got := counts("a"); len(got) != 3 || got[2] != 1 {
		t.Errorf("after a quiet interval: counts %v, want [1 2 1], the last at once", got)
	}
	l.note("a")
	l.close()
	if got := counts("a"); len(got) != 4 || got[3] != 1 {
		t.Errorf("after close: counts %v, want [1 2 1 1]", got)
	}
	l.note("a")
	time.Sleep(2 * interval) // no timer may log after close
	if got := counts("a"); len(got) != 4 {
		t.Errorf("a refusal after close: counts %v, want nothing more logged", got)
	}
}
