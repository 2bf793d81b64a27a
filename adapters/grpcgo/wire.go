package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
)

// The protocol's version and limits (adapters/PROTOCOL.md).
const (
	protocol = "rpcbench-adapter/1"
	maxLine  = 1 << 20
)

type wireInit struct {
	Protocol string `json:"protocol"`
	Scenario string `json:"scenario"`
}

type wireKeepalive struct {
	TimeMS              int64 `json:"time_ms"`
	TimeoutMS           int64 `json:"timeout_ms"`
	PermitWithoutStream bool  `json:"permit_without_stream"`
}

type wireChannel struct {
	ID            string          `json:"id"`
	Target        string          `json:"target"`
	ServiceConfig json.RawMessage `json:"service_config"`
	Keepalive     *wireKeepalive  `json:"keepalive"`
}

type wireCall struct {
	ID           int64             `json:"id"`
	Channel      wireChannel       `json:"channel"`
	Method       string            `json:"method"`
	Request      json.RawMessage   `json:"request"`
	DeadlineMS   int64             `json:"deadline_ms"`
	Metadata     map[string]string `json:"metadata"`
	WaitForReady bool              `json:"wait_for_ready"`
}

type capabilities struct {
	RetryPolicy      bool `json:"retry_policy"`
	Hedging          bool `json:"hedging"`
	Throttling       bool `json:"throttling"`
	TransparentRetry bool `json:"transparent_retry"`
	Keepalive        bool `json:"keepalive"`
	Pushback         bool `json:"pushback"`
	WaitForReady     bool `json:"wait_for_ready"`
	PerAttempt       bool `json:"per_attempt_timeout"`
}

type wireInitOK struct {
	Type         string       `json:"type"`
	Protocol     string       `json:"protocol"`
	Stack        string       `json:"stack"`
	Version      string       `json:"version"`
	Runtime      string       `json:"runtime"`
	Capabilities capabilities `json:"capabilities"`
}

type wireResult struct {
	Type      string              `json:"type"`
	ID        int64               `json:"id"`
	Code      string              `json:"code"`
	CodeNum   uint32              `json:"code_num"`
	Message   string              `json:"message"`
	Response  json.RawMessage     `json:"response"`
	ElapsedMS float64             `json:"elapsed_ms"`
	Headers   map[string][]string `json:"headers"`
	Trailers  map[string][]string `json:"trailers"`
}

type wireCallError struct {
	Type string `json:"type"`
	ID   int64  `json:"id"`
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// The call_error kinds.
const (
	kindConfig      = "config"
	kindUnsupported = "unsupported"
	kindBadRequest  = "bad_request"
	kindDuplicateID = "duplicate_id"
	kindProtocol    = "protocol"
)

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

// lineWriter writes whole JSON lines; writes from concurrent calls
// never interleave.
type lineWriter struct {
	mu sync.Mutex // guards w
	w  io.Writer
}

func (l *lineWriter) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // every message type marshals
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(append(b, '\n'))
}
