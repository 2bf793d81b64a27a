package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/trace"
)

// tracer collects a scenario's client attempts.
type tracer struct {
	mu      sync.Mutex
	clients int
	recs    []trace.Record
}

// Hook returns the client.Config.Trace of the scenario's next client.
func (tr *tracer) Hook() func(*client.Call, []client.Attempt, []client.Span) {
	tr.mu.Lock()
	tr.clients++
	id := tr.clients
	tr.mu.Unlock()
	calls := 0
	return func(call *client.Call, log []client.Attempt, spans []client.Span) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		calls++
		tr.recs = append(tr.recs, trace.Records(id, calls, call, log, spans)...)
	}
}

// write appends the records to dir's trace file for the scenario name;
// nothing when there are none.
func (tr *tracer) write(dir, name string) error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.recs) == 0 {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(dir, report.TraceLog(name)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	return errors.Join(trace.Write(f, tr.recs), f.Close())
}
