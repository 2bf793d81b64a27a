package cut

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Protocol is the protocol version this package speaks.
const Protocol = "rpcbench-adapter/1"

// MaxLine is the longest line, without its newline, either side may
// write, in bytes.
const MaxLine = 1 << 20

// Message types.
const (
	typeInit       = "init"
	typeInitOK     = "init_ok"
	typeCall       = "call"
	typeResult     = "result"
	typeCallError  = "call_error"
	typeShutdown   = "shutdown"
	typeShutdownOK = "shutdown_ok"
	typeFatal      = "fatal"
)

// Metadata names the harness sets on a call.
const (
	// MetaCall names the logical call in the server's log.
	MetaCall = "x-rpcbench-call"
	// MetaKey is the idempotency key of a keyed debit.
	MetaKey = "idempotency-key"
)

// Info is what an adapter said about itself in init_ok.
type Info struct {
	Stack   string
	Version string
	Runtime string
	Caps    Capabilities
}

// Capabilities are the library features an adapter says its stack
// implements; a scenario that needs one the stack lacks is unsupported.
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

// Channel is the library channel a call is made on. Calls with the same
// ID share one channel in the adapter, so they must agree on the rest.
type Channel struct {
	ID     string
	Target string
	// ServiceConfig is the library's own configuration as JSON (for
	// gRPC, the service config); nil for none.
	ServiceConfig json.RawMessage
	// Keepalive, when set, turns on client keepalive.
	Keepalive *Keepalive
}

// Keepalive is a channel's client keepalive, sent in whole milliseconds.
type Keepalive struct {
	// Time is how long without activity before a ping.
	Time time.Duration
	// Timeout is how long to wait for the ping's ACK.
	Timeout time.Duration
	// PermitWithoutStream allows pings with no call in flight.
	PermitWithoutStream bool
}

// Call is one call for the adapter to make.
type Call struct {
	Channel Channel
	// Method is package.Service/Method, such as
	// "rpcbench.bank.v1.Bank/Debit".
	Method string
	// Request is the request message in proto3 JSON; it must be an
	// object.
	Request json.RawMessage
	// Deadline bounds the whole call, every attempt included; it is sent
	// in milliseconds, rounded up, and must be positive.
	Deadline time.Duration
	// Name goes in metadata as x-rpcbench-call; empty sends none.
	Name string
	// Key goes in metadata as idempotency-key; empty sends none.
	Key string
	// Metadata is further request metadata; it may not repeat Name's or
	// Key's names.
	Metadata     map[string]string
	WaitForReady bool
}

// Result is the library's answer to a call.
type Result struct {
	ID      int64
	Code    Code
	Message string
	// Response is the response message in proto3 JSON when Code is OK,
	// nil otherwise.
	Response json.RawMessage
	// Sent is when the harness began writing the call line to the
	// adapter, by the harness's clock: the call cannot have started
	// before it.
	Sent time.Time
	// Elapsed runs from Sent to when the harness read the result line,
	// as the harness measured it: at least the call's true duration, and
	// what a verdict on time rests on.
	Elapsed time.Duration
	// Claimed is the adapter's own elapsed_ms: from just before it
	// invoked the library to just after it returned, as it measured it.
	// It is a report, not evidence; it may not exceed Elapsed by more
	// than ClaimSlack.
	Claimed  time.Duration
	Headers  map[string][]string
	Trailers map[string][]string
}

// ClaimSlack is how much longer than the harness's Elapsed an adapter's
// elapsed_ms may be: the rounding of a fractional millisecond, and
// nothing more. Both sides read the same monotonic clock, and the
// harness's interval contains the adapter's.
const ClaimSlack = time.Millisecond

type wireInit struct {
	Type     string `json:"type"`
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
	ServiceConfig json.RawMessage `json:"service_config,omitempty"`
	Keepalive     *wireKeepalive  `json:"keepalive,omitempty"`
}

type wireCall struct {
	Type         string            `json:"type"`
	ID           int64             `json:"id"`
	Channel      wireChannel       `json:"channel"`
	Method       string            `json:"method"`
	Request      json.RawMessage   `json:"request"`
	DeadlineMS   int64             `json:"deadline_ms"`
	Metadata     map[string]string `json:"metadata"`
	WaitForReady bool              `json:"wait_for_ready"`
}

type wireShutdown struct {
	Type string `json:"type"`
}

// ceilMS is d in whole milliseconds, rounded up.
func ceilMS(d time.Duration) int64 { return int64((d + time.Millisecond - 1) / time.Millisecond) }

// encodeCall returns the call line for c with id, without its newline,
// or says why c cannot be sent.
func encodeCall(id int64, c Call) ([]byte, error) {
	switch {
	case c.Channel.ID == "" || c.Channel.Target == "":
		return nil, errors.New("cut: a call needs a channel id and target")
	case c.Method == "":
		return nil, errors.New("cut: a call needs a method")
	case c.Deadline <= 0:
		return nil, fmt.Errorf("cut: call deadline %v, want > 0", c.Deadline)
	case !isObject(c.Request):
		return nil, fmt.Errorf("cut: call request %.80q is not a JSON object", c.Request)
	case c.Channel.ServiceConfig != nil && !isObject(c.Channel.ServiceConfig):
		return nil, fmt.Errorf("cut: service config %.80q is not a JSON object", c.Channel.ServiceConfig)
	}
	md := make(map[string]string, len(c.Metadata)+2)
	for k, v := range c.Metadata {
		if k == MetaCall || k == MetaKey {
			return nil, fmt.Errorf("cut: metadata %q is set by Call.Name or Call.Key", k)
		}
		md[k] = v
	}
	if c.Name != "" {
		md[MetaCall] = c.Name
	}
	if c.Key != "" {
		md[MetaKey] = c.Key
	}
	w := wireCall{Type: typeCall, ID: id, Method: c.Method, Request: c.Request,
		DeadlineMS: ceilMS(c.Deadline), Metadata: md, WaitForReady: c.WaitForReady,
		Channel: wireChannel{ID: c.Channel.ID, Target: c.Channel.Target, ServiceConfig: c.Channel.ServiceConfig}}
	if k := c.Channel.Keepalive; k != nil {
		w.Channel.Keepalive = &wireKeepalive{TimeMS: ceilMS(k.Time), TimeoutMS: ceilMS(k.Timeout), PermitWithoutStream: k.PermitWithoutStream}
	}
	return json.Marshal(w)
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// sameChannel reports whether a and b configure a channel the same way.
func sameChannel(a, b Channel) bool {
	ka, kb := a.Keepalive, b.Keepalive
	return a.Target == b.Target && jsonEqual(a.ServiceConfig, b.ServiceConfig) &&
		(ka == nil) == (kb == nil) && (ka == nil || *ka == *kb)
}

func jsonEqual(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// message is one decoded adapter line: its type and its fields, still
// raw, so that decode can hold each message to exactly its fields.
type message struct {
	typ    string
	fields map[string]json.RawMessage
}

// parseLine reads the envelope of an adapter line.
func parseLine(line []byte) (message, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return message{}, fmt.Errorf("not a JSON object: %v", err)
	}
	if fields == nil {
		return message{}, errors.New("not a JSON object")
	}
	raw, ok := fields["type"]
	if !ok {
		return message{}, errors.New(`no "type"`)
	}
	var typ string
	if err := json.Unmarshal(raw, &typ); err != nil {
		return message{}, fmt.Errorf(`"type" is not a string: %s`, raw)
	}
	return message{typ: typ, fields: fields}, nil
}

// decode fills v, a pointer to a struct whose json tags are exactly the
// message's fields, from m. Every field but those named in nullable is
// required and may not be null; an unknown field is an error.
func (m message) decode(v any, nullable ...string) error {
	want := jsonFields(v)
	for _, k := range slices.Sorted(maps.Keys(m.fields)) {
		if k != "type" && !slices.Contains(want, k) {
			return fmt.Errorf("%s has unknown field %q", m.typ, k)
		}
	}
	for _, k := range want {
		raw, ok := m.fields[k]
		if !ok {
			return fmt.Errorf("%s has no %q", m.typ, k)
		}
		if string(raw) == "null" && !slices.Contains(nullable, k) {
			return fmt.Errorf("%s has %q null", m.typ, k)
		}
	}
	rest := maps.Clone(m.fields)
	delete(rest, "type")
	b, _ := json.Marshal(rest)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %v", m.typ, err)
	}
	return nil
}

type wireInitOK struct {
	Protocol     string          `json:"protocol"`
	Stack        string          `json:"stack"`
	Version      string          `json:"version"`
	Runtime      string          `json:"runtime"`
	Capabilities json.RawMessage `json:"capabilities"`
}

type wireResult struct {
	ID        int64               `json:"id"`
	Code      string              `json:"code"`
	CodeNum   int64               `json:"code_num"`
	Message   string              `json:"message"`
	Response  json.RawMessage     `json:"response"`
	ElapsedMS float64             `json:"elapsed_ms"`
	Headers   map[string][]string `json:"headers"`
	Trailers  map[string][]string `json:"trailers"`
}

type wireCallError struct {
	ID   int64  `json:"id"`
	Kind string `json:"kind"`
	Text string `json:"text"`
}

type wireFatal struct {
	Text string `json:"text"`
}

type wireEmpty struct{}

// decodeInitOK returns the adapter's Info and the protocol it speaks.
func decodeInitOK(m message) (Info, string, error) {
	var w wireInitOK
	if err := m.decode(&w); err != nil {
		return Info{}, "", err
	}
	caps := message{typ: "capabilities"}
	if err := json.Unmarshal(w.Capabilities, &caps.fields); err != nil || caps.fields == nil {
		return Info{}, "", fmt.Errorf("init_ok capabilities %.80s is not an object", w.Capabilities)
	}
	info := Info{Stack: w.Stack, Version: w.Version, Runtime: w.Runtime}
	if err := caps.decode(&info.Caps); err != nil {
		return Info{}, "", fmt.Errorf("init_ok %v", err)
	}
	if info.Stack == "" || info.Version == "" || info.Runtime == "" {
		return Info{}, "", errors.New("init_ok has an empty stack, version or runtime")
	}
	return info, w.Protocol, nil
}

// decodeResult returns the result in m.
func decodeResult(m message) (Result, error) {
	var w wireResult
	if err := m.decode(&w, "response"); err != nil {
		return Result{}, err
	}
	code, ok := parseCode(w.Code, w.CodeNum)
	if !ok {
		return Result{}, fmt.Errorf("result %d: code %q with code_num %d is not a status code", w.ID, w.Code, w.CodeNum)
	}
	r := Result{ID: w.ID, Code: code, Message: w.Message, Headers: w.Headers, Trailers: w.Trailers,
		Claimed: time.Duration(w.ElapsedMS * float64(time.Millisecond))}
	switch {
	case w.ElapsedMS < 0:
		return Result{}, fmt.Errorf("result %d: elapsed_ms %v < 0", w.ID, w.ElapsedMS)
	case code == OK && !isObject(w.Response):
		return Result{}, fmt.Errorf("result %d: OK with response %.80s, want an object", w.ID, w.Response)
	case code != OK && string(w.Response) != "null":
		return Result{}, fmt.Errorf("result %d: %v with a response, want null", w.ID, code)
	case code == OK:
		r.Response = w.Response
	}
	return r, nil
}

// decodeCallError returns the call_error in m.
func decodeCallError(m message) (*CallError, error) {
	var w wireCallError
	if err := m.decode(&w); err != nil {
		return nil, err
	}
	kind, ok := parseCallErrorKind(w.Kind)
	if !ok {
		return nil, fmt.Errorf("call_error %d: unknown kind %q", w.ID, w.Kind)
	}
	return &CallError{ID: w.ID, Kind: kind, Text: w.Text}, nil
}

// jsonFields returns the json names of the fields of the struct v points
// to, from their tags.
func jsonFields(v any) []string {
	t := reflect.TypeOf(v).Elem()
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}
