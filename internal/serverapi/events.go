package serverapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// Event names: the msg of each JSON line rpcserver logs. The log is
// written with log/slog's JSON handler, one event per line.
const (
	EventListen             = "LISTEN"
	EventStartDelay         = "START_DELAY"
	EventSignal             = "SIGNAL"
	EventAcceptError        = "ACCEPT_ERROR"
	EventConnOpen           = "CONN_OPEN"
	EventSockoptError       = "SOCKOPT_ERROR"
	EventConnClosed         = "CONN_CLOSED"
	EventConnReadError      = "CONN_READ_ERROR"
	EventConnClosedMidFrame = "CONN_CLOSED_MID_FRAME"
	EventConnCloseInjected  = "CONN_CLOSE_INJECTED"
	EventProtocolError      = "PROTOCOL_ERROR"
	EventWriteTimeout       = "WRITE_TIMEOUT"
	EventQueueFull          = "QUEUE_FULL"
	EventExpired            = "EXPIRED"
	EventFault              = "FAULT"
	EventFaultSet           = "FAULT_SET"
	EventFaultClear         = "FAULT_CLEAR"
	EventDedupHit           = "DEDUP_HIT"
	EventDedupWaitExpired   = "DEDUP_WAIT_EXPIRED"
	EventKeyConflict        = "KEY_CONFLICT"
	EventStoreError         = "STORE_ERROR"
	EventExec               = "EXEC"
	EventConnRole           = "CONN_ROLE"
	EventLeaseLost          = "LEASE_LOST"
	EventStoreOpen          = "STORE_OPEN"
	EventCrash              = "CRASH"
	EventSweep              = "SWEEP"
	EventClaim              = "CLAIM"
	EventCanceled           = "CANCELED"

	// Events of a drain (SPEC.md, "Drain"). DRAIN_START and DRAIN_DONE
	// bracket it; DRAIN is the drain frame sent on one connection, with
	// the last ID taken there; DRAIN_DROPPED a frame read after it and
	// dropped; DRAINED the connection's FIN, once what it took is done.
	EventDrainStart   = "DRAIN_START"
	EventDrain        = "DRAIN"
	EventDrainDropped = "DRAIN_DROPPED"
	EventDrained      = "DRAINED"
	EventDrainDone    = "DRAIN_DONE"

	// Events of rpcserver's gRPC mode (internal/grpcwire/SPEC.md).

	// EventAttempt is logged for every request HEADERS the gRPC side
	// accepts, before anything else is decided about it: one per
	// attempt, transparent retries included.
	EventAttempt = "ATTEMPT"
	// EventStreamReset is logged when a gRPC client resets a stream
	// (RST_STREAM), with its code.
	EventStreamReset = "STREAM_RESET"
	// EventGoAwayReceived is logged when a gRPC client sends GOAWAY.
	EventGoAwayReceived = "GOAWAY_RECEIVED"

	// Events of the limits against hostile peers (SPEC.md, "Hostile
	// peers"), on both wires; KeyWire is set on the gRPC side's.
	//
	// EventReadTimeout: a connection did not finish its preface, a frame
	// or a header block within -read-timeout, and is closed.
	EventReadTimeout = "READ_TIMEOUT"
	// EventLimit: a limit refused something (KeyLimit names it, by its
	// flag); logged at most once a second per limit, KeyCount saying how
	// many were refused since the last one.
	EventLimit = "LIMIT"
	// EventLogSuppressed: a connection's log budget left KeyCount events
	// out; logged when the budget allows again, or when it closes.
	EventLogSuppressed = "LOG_SUPPRESSED"
)

// eventKeys lists, for every event, the attribute keys rpcserver always
// logs with it: ReadEvents refuses an event that lacks one, so that a
// reader never takes a missing key for an empty or zero value. Other
// known keys may come too (QUEUE_FULL's share, STORE_ERROR's id and key).
var eventKeys = map[string][]string{
	EventListen:             {KeyAddr, KeyConfig},
	EventStartDelay:         {KeyDelay},
	EventSignal:             {KeySignal},
	EventAcceptError:        {KeyErr, KeyRetryIn},
	EventConnOpen:           {KeyConn, KeyRemote},
	EventSockoptError:       {KeyConn, KeyErr},
	EventConnClosed:         {KeyConn, KeyRemote},
	EventConnReadError:      {KeyRemote, KeyErr, KeyReset},
	EventConnClosedMidFrame: {KeyRemote, KeyBuffered},
	EventConnCloseInjected:  {KeyRemote},
	EventProtocolError:      {KeyRemote, KeyErr},
	EventWriteTimeout:       {KeyRemote, KeyUnwritten, KeyTimeout, KeyErr},
	EventQueueFull:          {KeyConn, KeyID, KeyMethod},
	EventExpired:            {KeyID, KeyMethod, KeyBudget, KeyWaited},
	EventFault:              {KeyKind, KeyID, KeyMethod},
	EventFaultSet:           {KeyFault},
	EventFaultClear:         {},
	EventDedupHit:           {KeyID, KeyKey},
	EventDedupWaitExpired:   {KeyID, KeyKey},
	EventKeyConflict:        {KeyID, KeyKey},
	EventStoreError:         {KeyErr},
	EventExec:               {KeyConn, KeyID, KeyMethod, KeyKey, KeyAccount, KeyStatus},
	EventConnRole:           {KeyConn, KeyRole},
	EventLeaseLost:          {KeyID, KeyKey},
	EventStoreOpen:          {KeyStore, KeyTTL, KeyLease},
	EventCrash:              {KeyPoint},
	EventSweep:              {KeyDeleted},
	EventClaim:              {KeyID, KeyKey},
	EventCanceled:           {KeyConn, KeyID, KeyMethod, KeyWaited},
	EventDrainStart:         {KeyTimeout},
	EventDrain:              {KeyConn, KeyID},
	EventDrainDropped:       {KeyConn, KeyID, KeyMethod},
	EventDrained:            {KeyConn},
	EventDrainDone:          {KeyOpen},
	EventAttempt:            {KeyWire, KeyConn, KeyStream, KeyID, KeyMethod, KeyCall, KeyAttempt, KeyPrev, KeyGRPCTimeout, KeyBudget},
	EventStreamReset:        {KeyWire, KeyConn, KeyStream, KeyCode},
	EventGoAwayReceived:     {KeyWire, KeyConn, KeyCode},
	EventReadTimeout:        {KeyRemote, KeyConn, KeyBuffered, KeyTimeout},
	EventLimit:              {KeyLimit, KeyCount},
	EventLogSuppressed:      {KeyConn, KeyCount},
}

// Event attribute keys.
const (
	KeyRemote    = "remote"    // peer address
	KeyErr       = "err"       // error text
	KeyID        = "id"        // request ID
	KeyMethod    = "method"    // request method
	KeyKey       = "key"       // idempotency key
	KeyBudget    = "budget"    // request budget, ms
	KeyWaited    = "waited"    // ms a request waited before it was taken to execute
	KeyBuffered  = "buffered"  // bytes of an incomplete frame
	KeyOpen      = "open"      // connections open
	KeyRetryIn   = "retry_in"  // pause before accepting again
	KeyUnwritten = "unwritten" // bytes not written
	KeyTimeout   = "timeout"   // a configured timeout
	KeyFault     = "fault"     // a fault rule, canonical form
	KeyKind      = "kind"      // a fault kind
	KeyAddr      = "addr"      // listen address
	KeyConfig    = "config"    // the server's configuration
	KeyDelay     = "delay"     // start delay
	KeySignal    = "signal"    // signal received
	KeyReset     = "reset"     // true when a read failed because the peer reset the connection
	KeyConn      = "conn"      // the server's number for a connection, from 1
	KeyRole      = "role"      // a connection's role (ctl.hello)
	KeyAccount   = "account"   // the account a request named
	KeyStatus    = "status"    // the answer's status
	KeyShare     = "share"     // true when a connection\'s own share of the queue was full
	KeyStore     = "store"     // the store's kind: memory, sqlite or postgres
	KeyTTL       = "ttl"       // the idempotency records' time to live
	KeyLease     = "lease"     // the lease a claim takes on a key
	KeyPoint     = "point"     // a crash point
	KeyDeleted   = "deleted"   // records a sweep deleted

	// Keys of the gRPC mode's events. EXEC, FAULT, EXPIRED, CONN_OPEN,
	// CONN_CLOSED and PROTOCOL_ERROR carry KeyWire (and EXEC the call's
	// keys) only when they come from the gRPC side, so that rpcbench's
	// own wire logs exactly what it logged before the mode existed.
	KeyWire        = "wire"         // "grpc" on an event of the gRPC side
	KeyStream      = "stream"       // an HTTP/2 stream id
	KeyCall        = "call"         // the logical call: x-rpcbench-call, else the idempotency key, else ""
	KeyAttempt     = "attempt"      // the server's count of the call's attempts so far, this one included, from 1; 0 for a call without a name
	KeyPrev        = "prev"         // the grpc-previous-rpc-attempts header as sent, "-" when absent
	KeyGRPCTimeout = "grpc_timeout" // the grpc-timeout header as sent, "-" when absent
	KeyCode        = "code"         // an HTTP/2 error code (RST_STREAM, GOAWAY) or a gRPC status, by name

	KeyLimit = "limit" // the flag of the limit that refused something, without its dash
	KeyCount = "count" // how many were refused (LIMIT) or left out (LOG_SUPPRESSED)
)

// attrKind is the JSON type of an attribute's value.
type attrKind int

const (
	attrText attrKind = iota
	attrNumber
	attrBool
)

// keyKinds gives every attribute key its value's JSON type; a key not in
// it is unknown, and ReadEvents refuses it.
var keyKinds = map[string]attrKind{
	KeyRemote: attrText, KeyErr: attrText, KeyID: attrNumber, KeyMethod: attrText,
	KeyKey: attrText, KeyBudget: attrNumber, KeyWaited: attrNumber, KeyBuffered: attrNumber,
	KeyOpen: attrNumber, KeyRetryIn: attrText, KeyUnwritten: attrNumber, KeyTimeout: attrText,
	KeyFault: attrText, KeyKind: attrText, KeyAddr: attrText, KeyConfig: attrText,
	KeyDelay: attrText, KeySignal: attrText, KeyReset: attrBool, KeyConn: attrNumber,
	KeyRole: attrText, KeyAccount: attrText, KeyStatus: attrText, KeyShare: attrBool,
	KeyStore: attrText, KeyTTL: attrText, KeyLease: attrText, KeyPoint: attrText,
	KeyDeleted: attrNumber,
	KeyWire:    attrText, KeyStream: attrNumber, KeyCall: attrText, KeyAttempt: attrNumber,
	KeyPrev: attrText, KeyGRPCTimeout: attrText, KeyCode: attrText,
	KeyLimit: attrText, KeyCount: attrNumber,
}

// check reports whether v is of kind k, and if not, what was wanted.
func (k attrKind) check(v any) (want string, ok bool) {
	switch k {
	case attrNumber:
		_, ok = v.(float64)
		return "a number", ok
	case attrBool:
		_, ok = v.(bool)
		return "true or false", ok
	default:
		_, ok = v.(string)
		return "text", ok
	}
}

// Event is one decoded log line.
type Event struct {
	Time time.Time
	Name string
	// Attrs holds the event's attributes as JSON decoded them: numbers
	// are float64, text is string.
	Attrs map[string]any
}

// String renders e as "NAME k=v ...", attributes sorted by key.
func (e Event) String() string {
	keys := make([]string, 0, len(e.Attrs))
	for k := range e.Attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(e.Name)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%v", k, e.Attrs[k])
	}
	return b.String()
}

// Bool returns the boolean attribute k (false when absent).
func (e Event) Bool(k string) bool {
	b, _ := e.Attrs[k].(bool)
	return b
}

// Int returns the integer attribute k, and whether it is present.
func (e Event) Int(k string) (int64, bool) {
	f, ok := e.Attrs[k].(float64)
	return int64(f), ok
}

// Text returns the text attribute k ("" when absent).
func (e Event) Text(k string) string {
	s, _ := e.Attrs[k].(string)
	return s
}

// CutPrefix starts the line an evidence directory's writer puts in a log
// in place of the lines it left out (report.CutLog): it is not an event
// the server wrote, and a reader meets it only in committed evidence.
const CutPrefix = "#cut "

// EventCut is the name ReadEvents gives a CutPrefix line: an event with
// no time, whose Attrs["text"] says what was left out.
const EventCut = "LOG_CUT"

// EventTorn is the name ReadEvents gives the torn line a killed server
// leaves: the process died in the middle of writing an event. It is
// never logged.
const EventTorn = "TORN"

// tornPrefix starts every event line; a line torn by a crash is followed,
// on the same text line, by the next incarnation's first event.
var tornPrefix = []byte(`{"time":`)

// ReadEvents decodes an rpcserver log. A line that is not a JSON object
// with time, level and msg, whose msg is not a known event name, that
// lacks a key its event always has, or that has an unknown key or a value
// of the wrong type, is an error naming its line number, with two
// exceptions. A line starting CutPrefix, which the evidence writer put
// in place of the lines it left out of a committed log, is returned as
// an EventCut event. And a server killed
// while writing an event (SIGKILL can cut a write short) leaves a torn
// line, which a restarted server appending to the same log continues.
// Such a line, when it is the last one or is followed on the same line by
// a whole event, is returned as an EventTorn event (Attrs["text"] holds
// what is left of it) followed by that event.
func ReadEvents(r io.Reader) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if text, ok := bytes.CutPrefix(line, []byte(CutPrefix)); ok {
			out = append(out, Event{Name: EventCut, Attrs: map[string]any{"text": string(text)}})
			continue
		}
		e, err := decodeEvent(line)
		if err != nil {
			rest := -1
			if i := bytes.Index(line[1:], tornPrefix); i >= 0 {
				rest = i + 1
			}
			var next Event
			var nextErr error
			if rest >= 0 {
				next, nextErr = decodeEvent(line[rest:])
			}
			last := rest < 0 && startsLikeEvent(line) && !bytes.HasSuffix(line, []byte("}"))
			if !last && (rest < 0 || nextErr != nil || !startsLikeEvent(line[:rest])) {
				return out, fmt.Errorf("serverapi: log line %d: %w", n, err)
			}
			torn := Event{Name: EventTorn, Attrs: map[string]any{"text": string(line)}}
			if rest >= 0 {
				torn.Attrs["text"] = string(line[:rest])
				out = append(out, torn, next)
				continue
			}
			if sc.Scan() {
				return out, fmt.Errorf("serverapi: log line %d: %w", n, err)
			}
			return append(out, torn), sc.Err()
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// startsLikeEvent reports whether b begins as every event line does, or
// is a beginning of that: a kill can cut a line anywhere, even inside
// its first bytes.
func startsLikeEvent(b []byte) bool {
	n := min(len(b), len(tornPrefix))
	return n > 0 && bytes.Equal(b[:n], tornPrefix[:n])
}

// decodeEvent decodes one whole event line.
func decodeEvent(line []byte) (Event, error) {
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		return Event{}, err
	}
	name, _ := m["msg"].(string)
	required, ok := eventKeys[name]
	if !ok {
		return Event{}, fmt.Errorf("unknown event %q", name)
	}
	ts, _ := m["time"].(string)
	at, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return Event{}, fmt.Errorf("time %q: %w", ts, err)
	}
	if _, ok := m["level"].(string); !ok {
		return Event{}, fmt.Errorf("%s has no level", name)
	}
	delete(m, "msg")
	delete(m, "time")
	delete(m, "level")
	for _, k := range required {
		if _, ok := m[k]; !ok {
			return Event{}, fmt.Errorf("%s has no %s", name, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kind, ok := keyKinds[k]
		if !ok {
			return Event{}, fmt.Errorf("%s has unknown key %s", name, k)
		}
		if want, ok := kind.check(m[k]); !ok {
			return Event{}, fmt.Errorf("%s %s=%s, want %s", name, k, jsonText(m[k]), want)
		}
	}
	return Event{Time: at, Name: name, Attrs: m}, nil
}

// jsonText writes v as JSON, for an error to show what was sent.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
