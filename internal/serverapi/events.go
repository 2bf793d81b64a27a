package serverapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
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
	EventConnRejected       = "CONN_REJECTED"
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
)

var eventNames = []string{
	EventListen, EventStartDelay, EventSignal, EventAcceptError,
	EventConnOpen, EventSockoptError, EventConnRejected, EventConnClosed, EventConnReadError,
	EventConnClosedMidFrame, EventConnCloseInjected, EventProtocolError,
	EventWriteTimeout, EventQueueFull, EventExpired, EventFault,
	EventFaultSet, EventFaultClear, EventDedupHit, EventDedupWaitExpired,
	EventKeyConflict, EventStoreError, EventExec, EventConnRole,
	EventLeaseLost, EventStoreOpen, EventCrash, EventSweep, EventClaim,
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
)

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

// ReadEvents decodes an rpcserver log. A line that is not a JSON object
// with time, level and msg, or whose msg is not a known event name, is an
// error naming its line number.
func ReadEvents(r io.Reader) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return out, fmt.Errorf("serverapi: log line %d: %w", n, err)
		}
		name, _ := m["msg"].(string)
		if !slices.Contains(eventNames, name) {
			return out, fmt.Errorf("serverapi: log line %d: unknown event %q", n, name)
		}
		ts, _ := m["time"].(string)
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return out, fmt.Errorf("serverapi: log line %d: time %q: %w", n, ts, err)
		}
		delete(m, "msg")
		delete(m, "time")
		delete(m, "level")
		out = append(out, Event{Time: at, Name: name, Attrs: m})
	}
	return out, sc.Err()
}
