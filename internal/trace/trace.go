// Package trace is the record of one client attempt that rpcbench keeps:
// scenarios append it to an evidence directory's logs/trace-NAME.jsonl,
// rpcbench call --json prints it, and the report's timeline reads it
// back. Its times vary between runs; rpcbench diff never reads it.
package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// Record is one attempt of one call, as the client saw it: one JSON
// object per line of a trace file, its keys in this order.
type Record struct {
	// Client numbers a scenario's clients from 1, in creation order;
	// Call numbers each client's calls from 1, Attempt a call's attempts.
	Client  int    `json:"client"`
	Call    int    `json:"call"`
	Attempt int    `json:"attempt"`
	Method  string `json:"method"`
	// Key is the idempotency key; "" when none.
	Key string `json:"key"`
	// ID is the request ID sent; 0 when the request was never sent.
	ID uint64 `json:"id"`
	// Start and End bound the attempt, in UTC.
	Start   time.Time      `json:"start"`
	End     time.Time      `json:"end"`
	Outcome client.Outcome `json:"outcome"`
	Class   client.Class   `json:"class"`
	// Status is the answer's status when Outcome is RESPONSE, else "".
	Status   string `json:"status"`
	BudgetMs uint32 `json:"budget_ms"`
	// BackoffMs is the pause after this attempt, in whole milliseconds;
	// 0 if none.
	BackoffMs int64  `json:"backoff_ms"`
	Addr      string `json:"addr"`
	// Err says what went wrong; "" for an answer.
	Err string `json:"err"`
}

// New is the Record of attempt i (from 0) of call, the call-th call of
// client cl, with span its start and end.
func New(cl, callNo int, call *client.Call, i int, a client.Attempt, span client.Span) Record {
	r := Record{Client: cl, Call: callNo, Attempt: i + 1, Method: call.Method, Key: call.Key, ID: a.ID,
		Start: span.Start.UTC(), End: span.End.UTC(), Outcome: a.Outcome, Class: a.Class,
		BudgetMs: a.BudgetMs, BackoffMs: a.Backoff.Milliseconds(), Addr: a.Addr, Err: a.Err}
	if a.Outcome == client.OutcomeResponse {
		r.Status = a.Status.String()
	}
	return r
}

// Records is New for each attempt of a call's log, its spans beside it:
// what a client.Config.Trace hook is handed.
func Records(cl, callNo int, call *client.Call, log []client.Attempt, spans []client.Span) []Record {
	out := make([]Record, len(log))
	for i, a := range log {
		out[i] = New(cl, callNo, call, i, a, spans[i])
	}
	return out
}

// Unknown reports whether the attempt's request may or may not have
// executed: it was sent and no usable answer came back.
func (r Record) Unknown() bool { return r.Class == client.ClassUnknown }

// String is the attempt as the client's log writes one, "a2 RESPONSE
// status=OK id=2 budget=300 class=FINAL", for -v.
func (r Record) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "a%d %v", r.Attempt, r.Outcome)
	if r.Status != "" {
		fmt.Fprintf(&b, " status=%s", r.Status)
	}
	if r.Err != "" {
		fmt.Fprintf(&b, " err=%q", r.Err)
	}
	fmt.Fprintf(&b, " id=%d budget=%d class=%v", r.ID, r.BudgetMs, r.Class)
	if r.BackoffMs > 0 {
		fmt.Fprintf(&b, " backoff=%dms", r.BackoffMs)
	}
	return b.String()
}

// Write writes recs to w, one JSON object per line, in one Write.
func Write(w io.Writer, recs []Record) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return fmt.Errorf("trace: %w", err)
		}
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}

// required must be on every line. The others (key, status, backoff_ms,
// addr, err) may be left out when empty or zero.
var required = []string{"client", "call", "attempt", "method", "id", "start", "end", "outcome", "class", "budget_ms"}

// Read decodes a trace. A line that is not a JSON object, has a key
// Record does not know, lacks a required key, names an outcome or class
// the client does not have, or ends before it starts is an error naming
// its line number; the records before it are returned with it. Blank
// lines are skipped.
func Read(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || bytes.HasPrefix(line, []byte(serverapi.CutPrefix)) {
			// A cut line stands for attempts the evidence writer left
			// out of a committed trace; the records around it are whole.
			continue
		}
		rec, err := decode(line)
		if err != nil {
			return out, fmt.Errorf("trace: line %d: %w", n, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("trace: %w", err)
	}
	return out, nil
}

func decode(line []byte) (Record, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(line, &keys); err != nil {
		return Record{}, err
	}
	var missing []string
	for _, k := range required {
		if _, ok := keys[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return Record{}, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var rec Record
	if err := dec.Decode(&rec); err != nil {
		return Record{}, err
	}
	switch {
	case rec.Client < 1:
		return Record{}, fmt.Errorf("client %d, want 1 or more", rec.Client)
	case rec.End.Before(rec.Start):
		return Record{}, errors.New("end before start")
	case rec.BackoffMs < 0:
		return Record{}, fmt.Errorf("backoff_ms %d is negative", rec.BackoffMs)
	}
	return rec, nil
}
