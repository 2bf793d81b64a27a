package clientkit

import (
	"bytes"
	"encoding/json"
)

// The protocol's version and limits (adapters/PROTOCOL.md).
const (
	Protocol = "rpcbench-adapter/1"
	MaxLine  = 1 << 20 // bytes in one line, its newline left out
)

type wireInit struct {
	Protocol string `json:"protocol"`
	Scenario string `json:"scenario"`
}

// Keepalive is a channel's keepalive, as the harness sends it.
type Keepalive struct {
	TimeMS              int64 `json:"time_ms"`
	TimeoutMS           int64 `json:"timeout_ms"`
	PermitWithoutStream bool  `json:"permit_without_stream"`
}

// Channel is a call's channel, as the harness sends it: every call on
// one id carries the same configuration.
type Channel struct {
	ID            string          `json:"id"`
	Target        string          `json:"target"`
	ServiceConfig json.RawMessage `json:"service_config"`
	Keepalive     *Keepalive      `json:"keepalive"` // nil for none
}

// CompactConfig is the service config without insignificant space, nil
// for none, so that two spellings of one config compare equal.
func (c Channel) CompactConfig() []byte {
	raw := c.ServiceConfig
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// Call is one call line, checked: its id is unused, its deadline at
// least 1 ms.
type Call struct {
	ID           int64             `json:"id"`
	Channel      Channel           `json:"channel"`
	Method       string            `json:"method"`
	Request      json.RawMessage   `json:"request"`
	DeadlineMS   int64             `json:"deadline_ms"`
	Metadata     map[string]string `json:"metadata"` // -bin values are the binary values themselves
	WaitForReady bool              `json:"wait_for_ready"`
}

// Capabilities are what a stack's library implements, for init_ok.
type Capabilities struct {
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
	Capabilities Capabilities `json:"capabilities"`
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
	KindConfig      = "config"
	KindUnsupported = "unsupported"
	KindBadRequest  = "bad_request"
	KindDuplicateID = "duplicate_id"
	KindProtocol    = "protocol"
)

// CallError is why a call was not made, as its call_error line says it.
type CallError struct {
	Kind string // one of the Kind constants
	Text string
}

func (e *CallError) Error() string { return "clientkit: call_error " + e.Kind + ": " + e.Text }
