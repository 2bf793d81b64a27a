package timeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Attempt is one line of a client trace, logs/trace-NAME.jsonl: one
// attempt of one call, as the client saw it.
type Attempt struct {
	// Client is the scenario's number for the client, from 1.
	Client int    `json:"client"`
	Method string `json:"method"`
	// Key is the idempotency key; "" when none.
	Key string `json:"key"`
	// Attempt counts the call's attempts from 1.
	Attempt int `json:"attempt"`
	// Call counts the client's calls from 1.
	Call int `json:"call"`
	// ID is the request ID sent; 0 when the request was never sent.
	ID    uint64    `json:"id"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Outcome is what the attempt met: RESPONSE, TIMEOUT, CONNECT_FAILED,
	// CONN_LOST_AFTER_SEND, ...
	Outcome string `json:"outcome"`
	// Class is NOT_SENT, NOT_EXECUTED, OUTCOME_UNKNOWN or FINAL.
	Class string `json:"class"`
	// Status is the answer's status when Outcome is RESPONSE.
	Status   string `json:"status"`
	BudgetMs int    `json:"budget_ms"`
	// BackoffMs is the pause after this attempt; 0 if none.
	BackoffMs int    `json:"backoff_ms"`
	Addr      string `json:"addr"`
	Err       string `json:"err"`
}

// requiredTraceKeys must be on every trace line. The others (key,
// status, backoff_ms, addr, err) may be left out when empty or zero.
var requiredTraceKeys = []string{"client", "method", "attempt", "call", "id", "start", "end", "outcome", "class", "budget_ms"}

// Outcome classes and outcomes that mean a request may or may not have
// executed (internal/client's Class and Outcome names).
const classUnknown = "OUTCOME_UNKNOWN"

var unknownOutcomes = []string{"TIMEOUT", "CANCELED", "CONN_LOST_AFTER_SEND", "PROTOCOL_ERROR_AFTER_SEND"}

// Unknown reports whether the attempt's request may or may not have
// executed: it was sent and no usable answer came back.
func (a Attempt) Unknown() bool {
	return a.Class == classUnknown || slices.Contains(unknownOutcomes, a.Outcome)
}

// ReadTrace decodes a client trace. A line that is not a JSON object, has
// a key Attempt does not know, lacks a required key, or ends before it
// starts is an error naming its line number; the attempts before it are
// returned with it. Blank lines are skipped.
func ReadTrace(r io.Reader) ([]Attempt, error) {
	var out []Attempt
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		a, err := decodeAttempt(line)
		if err != nil {
			return out, fmt.Errorf("timeline: trace line %d: %w", n, err)
		}
		out = append(out, a)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("timeline: trace: %w", err)
	}
	return out, nil
}

func decodeAttempt(line []byte) (Attempt, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(line, &keys); err != nil {
		return Attempt{}, err
	}
	var missing []string
	for _, k := range requiredTraceKeys {
		if _, ok := keys[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return Attempt{}, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var a Attempt
	if err := dec.Decode(&a); err != nil {
		return Attempt{}, err
	}
	switch {
	case a.Client < 1:
		return Attempt{}, fmt.Errorf("client %d, want 1 or more", a.Client)
	case a.End.Before(a.Start):
		return Attempt{}, errors.New("end before start")
	case a.BackoffMs < 0:
		return Attempt{}, fmt.Errorf("backoff_ms %d is negative", a.BackoffMs)
	}
	return a, nil
}
