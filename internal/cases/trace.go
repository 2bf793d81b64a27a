package cases

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
)

// TracePrefix starts the name of the file in which a scenario's client
// attempts are recorded, next to its server logs: trace-NAME.jsonl.
const TracePrefix = "trace-"

// TraceRecord is one client attempt as trace-NAME.jsonl records it, one
// JSON object per line, for timelines (rpcbench report). Its times vary
// between runs; rpcbench diff never reads it.
type TraceRecord struct {
	// Client numbers the scenario's clients from 1, in creation order;
	// Call numbers each client's calls from 1, Attempt a call's attempts.
	Client    int    `json:"client"`
	Call      int    `json:"call"`
	Attempt   int    `json:"attempt"`
	Method    string `json:"method"`
	Key       string `json:"key"`
	ID        uint64 `json:"id"`
	Start     string `json:"start"`
	End       string `json:"end"`
	Outcome   string `json:"outcome"`
	Class     string `json:"class"`
	Status    string `json:"status"`
	BudgetMs  uint32 `json:"budget_ms"`
	BackoffMs int64  `json:"backoff_ms"`
	Addr      string `json:"addr"`
	Err       string `json:"err"`
}

// tracer collects a scenario's client attempts.
type tracer struct {
	mu      sync.Mutex
	clients int
	recs    []TraceRecord
}

// hook returns the client.Config.Trace of the scenario's next client.
func (tr *tracer) hook() func(*client.Call, []client.Attempt, []client.Span) {
	tr.mu.Lock()
	tr.clients++
	id := tr.clients
	tr.mu.Unlock()
	calls := 0
	return func(call *client.Call, log []client.Attempt, spans []client.Span) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		calls++
		for i, a := range log {
			r := TraceRecord{Client: id, Call: calls, Attempt: i + 1, Method: call.Method, Key: call.Key, ID: a.ID,
				Start: spans[i].Start.UTC().Format(time.RFC3339Nano), End: spans[i].End.UTC().Format(time.RFC3339Nano),
				Outcome: a.Outcome.String(), Class: a.Class.String(), BudgetMs: a.BudgetMs, BackoffMs: a.Backoff.Milliseconds(),
				Addr: a.Addr, Err: a.Err}
			if a.Outcome == client.OutcomeResponse {
				r.Status = a.Status.String()
			}
			tr.recs = append(tr.recs, r)
		}
	}
}

// write appends the records to dir/trace-NAME.jsonl; nothing when there
// are none.
func (tr *tracer) write(dir, name string) error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.recs) == 0 {
		return nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := range tr.recs {
		if err := enc.Encode(&tr.recs[i]); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, TracePrefix+name+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b.Bytes())
	return errors.Join(err, f.Close())
}
