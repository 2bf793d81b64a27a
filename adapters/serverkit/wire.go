package serverkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
)

// The protocol's version and limits (adapters/SERVER-PROTOCOL.md).
const (
	Protocol = "rpcbench-server/1"
	maxLine  = 1 << 20
)

type wireInit struct {
	Protocol string `json:"protocol"`
	Scenario string `json:"scenario"`
}

type wireServing struct {
	Type     string `json:"type"`
	Protocol string `json:"protocol"`
	Stack    string `json:"stack"`
	Version  string `json:"version"`
	Runtime  string `json:"runtime"`
	Addr     string `json:"addr"`
}

type wireStart struct {
	Type   string `json:"type"`
	Call   string `json:"call"`
	Method string `json:"method"`
	// DeadlineMS is nil when the library gave the handler no deadline.
	DeadlineMS *float64 `json:"deadline_ms"`
}

type wireExec struct {
	Type    string `json:"type"`
	Call    string `json:"call"`
	Method  string `json:"method"`
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
	Balance int64  `json:"balance"`
}

type wireEnd struct {
	Type     string `json:"type"`
	Call     string `json:"call"`
	Method   string `json:"method"`
	Executed bool   `json:"executed"`
	Ctx      string `json:"ctx"`
	Code     Code   `json:"code"`
}

type wireFatal struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// fields is a harness line's object, each field still raw.
type fields map[string]json.RawMessage

// decode fills v from f, holding f to exactly the fields named: those in
// required must be present and not null, those in optional may be
// absent, and any other but "type" is an error.
func (f fields) decode(v any, required, optional []string) error {
	for _, k := range slices.Sorted(maps.Keys(f)) {
		if k != "type" && !slices.Contains(required, k) && !slices.Contains(optional, k) {
			return fmt.Errorf("unknown field %q", k)
		}
	}
	for _, k := range required {
		if raw, ok := f[k]; !ok || string(raw) == "null" {
			return fmt.Errorf("no %q", k)
		}
	}
	rest := maps.Clone(f)
	delete(rest, "type")
	b, _ := json.Marshal(rest)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// lineWriter writes whole JSON lines; writes from concurrent handlers
// never interleave.
type lineWriter struct {
	mu sync.Mutex // guards w
	w  io.Writer
}

// send writes v as one line, in one Write, before it returns.
func (l *lineWriter) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // every message type marshals
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(append(b, '\n'))
}
