package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// OpKind is what a workload operation asks of the bank.
type OpKind string

// Operation kinds.
const (
	OpGet          OpKind = "get"
	OpKeyedDebit   OpKind = "debit_keyed"
	OpKeylessDebit OpKind = "debit_keyless"
)

// Outcome is what the caller learned about an operation.
type Outcome string

// Outcomes.
const (
	// OutcomeOK: the server executed the operation (or replayed the
	// answer of its one execution) and answered OK.
	OutcomeOK Outcome = "ok"
	// OutcomeFailed: the server said the operation did not execute:
	// UNAVAILABLE, DEADLINE_EXCEEDED, or APP_ERROR insufficient funds
	// (a refusal that changed nothing).
	OutcomeFailed Outcome = "failed"
	// OutcomeUnknown: it may or may not have executed.
	OutcomeUnknown Outcome = "unknown"
)

// Op is one operation of the history, as the workload recorded it. Times
// are nanoseconds since the run's start, on the monotonic clock.
type Op struct {
	// ID numbers the operations of the run from 1, in invocation order
	// per client.
	ID     int    `json:"id"`
	Client int    `json:"client"`
	Kind   OpKind `json:"kind"`
	// Account is the account the operation names.
	Account string `json:"account"`
	// Amount is the debit's amount; 0 for a get.
	Amount int64 `json:"amount,omitempty"`
	// Key is a keyed debit's idempotency key.
	Key    string `json:"key,omitempty"`
	Invoke int64  `json:"invoke"`
	// Complete is when the call returned.
	Complete int64   `json:"complete"`
	Outcome  Outcome `json:"outcome"`
	// Status is the final status's name (OK, UNAVAILABLE, UNKNOWN, ...).
	Status string `json:"status"`
	// For OK: the account, balance and debit count the answer names.
	// RespAccount differs from Account only if an answer reached the
	// wrong call.
	RespAccount string `json:"resp_account,omitempty"`
	Balance     int64  `json:"balance,omitempty"`
	Exec        int64  `json:"exec,omitempty"`
	// Replayed is true when the OK answer was a replay of the key's one
	// execution.
	Replayed bool `json:"replayed,omitempty"`
	// Attempts is how many attempts the call made.
	Attempts int `json:"attempts"`
	// Err is the call's error text, if any.
	Err string `json:"err,omitempty"`
}

// WriteHistory writes ops as JSON lines.
func WriteHistory(w io.Writer, ops []Op) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range ops {
		if err := enc.Encode(&ops[i]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadHistory reads what WriteHistory wrote.
func ReadHistory(r io.Reader) ([]Op, error) {
	var ops []Op
	dec := json.NewDecoder(r)
	for {
		var op Op
		if err := dec.Decode(&op); err == io.EOF {
			return ops, nil
		} else if err != nil {
			return nil, fmt.Errorf("chaos: history line %d: %w", len(ops)+1, err)
		}
		ops = append(ops, op)
	}
}
