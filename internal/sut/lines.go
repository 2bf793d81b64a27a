package sut

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// The adapter's lines, as JSON gives them: a pointer is nil when its
// field is missing. DeadlineMs is json.RawMessage so that null and a
// missing field differ.
type (
	lineServing struct {
		Type     string  `json:"type"`
		Protocol *string `json:"protocol"`
		Stack    *string `json:"stack"`
		Version  *string `json:"version"`
		Runtime  *string `json:"runtime"`
		Addr     *string `json:"addr"`
	}
	lineStart struct {
		Type       string          `json:"type"`
		Call       *string         `json:"call"`
		Method     *string         `json:"method"`
		DeadlineMs json.RawMessage `json:"deadline_ms"`
	}
	lineExec struct {
		Type    string  `json:"type"`
		Call    *string `json:"call"`
		Method  *string `json:"method"`
		Account *string `json:"account"`
		Amount  *int64  `json:"amount"`
		Balance *int64  `json:"balance"`
	}
	lineEnd struct {
		Type     string  `json:"type"`
		Call     *string `json:"call"`
		Method   *string `json:"method"`
		Executed *bool   `json:"executed"`
		Ctx      *string `json:"ctx"`
		Code     *string `json:"code"`
	}
	lineShutdownOK struct {
		Type string `json:"type"`
	}
	lineFatal struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
)

// codes are the canonical status names an end may give.
var codes = []string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
	"PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// strict decodes b into v, refusing unknown fields and trailing data.
func strict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("data after the object")
	}
	return nil
}

// missing returns an error naming the first nil field of fields.
func missing(fields map[string]bool) error {
	var names []string
	for n, ok := range fields {
		if !ok {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	return fmt.Errorf("missing %v", names)
}

// lineLocked takes one line read at at.
func (s *Server) lineLocked(b []byte, at time.Time) error {
	var head struct{ Type string }
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("not a JSON object with a string type: %v", err)
	}
	if head.Type != "serving" && head.Type != "fatal" && s.phase == 0 {
		return fmt.Errorf("%q before serving", head.Type)
	}
	switch head.Type {
	case "serving":
		var l lineServing
		if err := strict(b, &l); err != nil {
			return err
		}
		if err := missing(map[string]bool{"protocol": l.Protocol != nil, "stack": l.Stack != nil, "version": l.Version != nil,
			"runtime": l.Runtime != nil, "addr": l.Addr != nil}); err != nil {
			return err
		}
		if s.phase != 0 {
			return fmt.Errorf("a second serving")
		}
		if *l.Protocol != Protocol {
			return fmt.Errorf("protocol %q, want %q", *l.Protocol, Protocol)
		}
		if *l.Stack == "" || *l.Version == "" || *l.Addr == "" {
			return fmt.Errorf("empty stack, version or addr")
		}
		s.info = Info{Stack: *l.Stack, Version: *l.Version, Runtime: *l.Runtime, Addr: *l.Addr}
		s.phase = 1
	case "start":
		var l lineStart
		if err := strict(b, &l); err != nil {
			return err
		}
		if err := missing(map[string]bool{"call": l.Call != nil, "method": l.Method != nil, "deadline_ms": l.DeadlineMs != nil}); err != nil {
			return err
		}
		e := Event{Type: "start", Call: *l.Call, Method: *l.Method, At: at}
		if string(l.DeadlineMs) != "null" {
			var ms float64
			if err := json.Unmarshal(l.DeadlineMs, &ms); err != nil {
				return fmt.Errorf("deadline_ms: %v", err)
			}
			e.DeadlineMs = &ms
		}
		if err := s.eventLocked(e); err != nil {
			return err
		}
	case "exec":
		var l lineExec
		if err := strict(b, &l); err != nil {
			return err
		}
		if err := missing(map[string]bool{"call": l.Call != nil, "method": l.Method != nil, "account": l.Account != nil,
			"amount": l.Amount != nil, "balance": l.Balance != nil}); err != nil {
			return err
		}
		if err := s.eventLocked(Event{Type: "exec", Call: *l.Call, Method: *l.Method, Account: *l.Account,
			Amount: *l.Amount, Balance: *l.Balance, At: at}); err != nil {
			return err
		}
	case "end":
		var l lineEnd
		if err := strict(b, &l); err != nil {
			return err
		}
		if err := missing(map[string]bool{"call": l.Call != nil, "method": l.Method != nil, "executed": l.Executed != nil,
			"ctx": l.Ctx != nil, "code": l.Code != nil}); err != nil {
			return err
		}
		if !slices.Contains([]string{CtxActive, CtxCancelled, CtxDeadlineExceeded}, *l.Ctx) {
			return fmt.Errorf("ctx %q, want active, cancelled or deadline_exceeded", *l.Ctx)
		}
		if !slices.Contains(codes, *l.Code) {
			return fmt.Errorf("code %q is not a canonical status name", *l.Code)
		}
		if err := s.eventLocked(Event{Type: "end", Call: *l.Call, Method: *l.Method, Executed: *l.Executed,
			Ctx: *l.Ctx, Code: *l.Code, At: at}); err != nil {
			return err
		}
	case "shutdown_ok":
		if err := strict(b, &lineShutdownOK{}); err != nil {
			return err
		}
		if s.phase != 2 {
			return fmt.Errorf("shutdown_ok before shutdown")
		}
		s.phase = 3
	case "fatal":
		var l lineFatal
		if err := strict(b, &l); err != nil || l.Text == nil {
			return fmt.Errorf("a fatal line without its text")
		}
		return fmt.Errorf("fatal: %s", *l.Text)
	default:
		return fmt.Errorf("unknown type %q", head.Type)
	}
	s.changedLocked()
	return nil
}

// handlers are the handlers open for one call and method, and the
// execs they have written.
type handlers struct{ open, execs int }

// eventLocked checks e against the handlers open, and keeps it: each
// handler writes at most one exec, between its start and its end, and
// its end says whether it did. Lines do not say which of a call's
// handlers wrote an exec, so a second exec is caught as more execs than
// handlers open: when written, or when an end leaves them so.
func (s *Server) eventLocked(e Event) error {
	if !slices.Contains(Methods, e.Method) {
		return fmt.Errorf("no method %q (the Bank has %v)", e.Method, Methods)
	}
	k := [2]string{e.Call, e.Method}
	h := s.open[k]
	if h == nil {
		h = &handlers{}
		s.open[k] = h
	}
	switch e.Type {
	case "start":
		h.open++
	case "exec":
		switch {
		case h.open == 0:
			return fmt.Errorf("an exec of call %q's %s with no handler open", e.Call, e.Method)
		case h.execs >= h.open:
			return fmt.Errorf("a second exec of call %q's %s in one handler", e.Call, e.Method)
		case e.Method == "Echo":
			return fmt.Errorf("an exec of an Echo, which executes nothing")
		case e.Method == "Get" && e.Amount != 0:
			return fmt.Errorf("a Get's exec with amount %d, want 0", e.Amount)
		case e.Method == "Debit" && e.Amount <= 0:
			return fmt.Errorf("a Debit's exec with amount %d, which it must have refused", e.Amount)
		}
		h.execs++
	case "end":
		switch {
		case h.open == 0:
			return fmt.Errorf("an end of call %q's %s with no handler open", e.Call, e.Method)
		case e.Executed && h.execs == 0:
			return fmt.Errorf("an end of call %q's %s says executed, with no exec", e.Call, e.Method)
		case !e.Executed && h.open == 1 && h.execs > 0:
			return fmt.Errorf("an end of call %q's %s says not executed, after its exec", e.Call, e.Method)
		}
		h.open--
		if e.Executed {
			h.execs--
		}
		if h.execs > h.open {
			return fmt.Errorf("a second exec of call %q's %s in one handler, or an end denying its exec: %d execs unclaimed by %d handlers open",
				e.Call, e.Method, h.execs, h.open)
		}
	}
	s.events = append(s.events, e)
	return nil
}
