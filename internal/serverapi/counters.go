package serverapi

import (
	"fmt"
	"strconv"
	"strings"
)

// Counters are rpcserver's counters as ctl.stats reports them. SPEC.md
// says what each counts. Gauges (ConnsOpen, Goroutines) are values at the
// moment of the call.
type Counters struct {
	RequestsGet    int64 // requests.get
	RequestsDebit  int64 // requests.debit
	RequestsEcho   int64 // requests.echo
	RequestsCtl    int64 // requests.ctl
	RequestsOther  int64 // requests.other
	ExecGet        int64 // exec.get
	ExecDebit      int64 // exec.debit
	ExecEcho       int64 // exec.echo
	Expired        int64 // expired
	Unavailable    int64 // unavailable
	QueueFull      int64 // queue_full
	ConnQueueFull  int64 // conn_queue_full
	DedupHits      int64 // dedup_hits
	KeyConflicts   int64 // key_conflicts
	ProtocolErrors int64 // protocol_errors
	ConnsAccepted  int64 // conns_accepted
	ConnsRejected  int64 // conns_rejected
	ConnsOpen      int64 // conns_open
	OutLimitWaits  int64 // out_limit_waits
	WriteTimeouts  int64 // write_timeouts
	Goroutines     int64 // goroutines
	FramesSent     int64 // frames_sent
	WriteChunks    int64 // write_chunks
	FaultsFired    int64 // faults_fired
	Canceled       int64 // canceled
	DrainDropped   int64 // drain_dropped
	// Counters of the limits against hostile peers (SPEC.md, "Hostile
	// peers"), on both wires where they apply.
	ReadTimeouts   int64 // read_timeouts: connections closed for a preface, frame or header block not finished within -read-timeout
	StreamsRefused int64 // streams_refused: gRPC streams refused REFUSED_STREAM, unexecuted, by a limit (-grpc-max-streams, -max-out-bytes, -max-out-total)
	CalmCloses     int64 // calm_closes: connections closed at once by a flood verdict (ENHANCE_YOUR_CALM)
	LogSuppressed  int64 // log_suppressed: events a connection's log budget left out
}

// named lists every counter with its wire name, sorted by name.
func (c *Counters) named() []struct {
	name string
	v    *int64
} {
	return []struct {
		name string
		v    *int64
	}{
		{"calm_closes", &c.CalmCloses},
		{"canceled", &c.Canceled},
		{"conn_queue_full", &c.ConnQueueFull},
		{"conns_accepted", &c.ConnsAccepted},
		{"conns_open", &c.ConnsOpen},
		{"conns_rejected", &c.ConnsRejected},
		{"dedup_hits", &c.DedupHits},
		{"drain_dropped", &c.DrainDropped},
		{"exec.debit", &c.ExecDebit},
		{"exec.echo", &c.ExecEcho},
		{"exec.get", &c.ExecGet},
		{"expired", &c.Expired},
		{"faults_fired", &c.FaultsFired},
		{"frames_sent", &c.FramesSent},
		{"goroutines", &c.Goroutines},
		{"key_conflicts", &c.KeyConflicts},
		{"log_suppressed", &c.LogSuppressed},
		{"out_limit_waits", &c.OutLimitWaits},
		{"protocol_errors", &c.ProtocolErrors},
		{"queue_full", &c.QueueFull},
		{"read_timeouts", &c.ReadTimeouts},
		{"requests.ctl", &c.RequestsCtl},
		{"requests.debit", &c.RequestsDebit},
		{"requests.echo", &c.RequestsEcho},
		{"requests.get", &c.RequestsGet},
		{"requests.other", &c.RequestsOther},
		{"streams_refused", &c.StreamsRefused},
		{"unavailable", &c.Unavailable},
		{"write_chunks", &c.WriteChunks},
		{"write_timeouts", &c.WriteTimeouts},
	}
}

// CounterNames returns every counter's wire name, sorted.
func CounterNames() []string {
	var c Counters
	named := c.named()
	out := make([]string, len(named))
	for i, n := range named {
		out[i] = n.name
	}
	return out
}

// String formats c as ctl.stats answers it: name=value pairs sorted by
// name.
func (c Counters) String() string {
	var b strings.Builder
	for i, n := range c.named() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(n.name)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(*n.v, 10))
	}
	return b.String()
}

// ParseCounters decodes a ctl.stats answer. Every counter must be present
// exactly once with an integer value, and no other may be: a renamed or
// missing counter is an error, never a silent zero.
func ParseCounters(text []byte) (Counters, error) {
	fs, err := ParseFields(text)
	if err != nil {
		return Counters{}, err
	}
	var c Counters
	named := c.named()
	for _, n := range named {
		v, ok := fs[n.name]
		if !ok {
			return Counters{}, fmt.Errorf("serverapi: counter %s missing from %q", n.name, text)
		}
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return Counters{}, fmt.Errorf("serverapi: counter %s=%q is not an integer", n.name, v)
		}
		*n.v = i
		delete(fs, n.name)
	}
	if len(fs) > 0 {
		return Counters{}, fmt.Errorf("serverapi: unknown counters %v", fs)
	}
	// ParseFields keeps the last of two equal keys, so a counter sent
	// twice shows only as a token too many.
	if n := len(strings.Fields(string(text))); n != len(named) {
		seen := map[string]bool{}
		for _, tok := range strings.Fields(string(text)) {
			name, _, _ := strings.Cut(tok, "=")
			if seen[name] {
				return Counters{}, fmt.Errorf("serverapi: counter %s sent twice in %q", name, text)
			}
			seen[name] = true
		}
	}
	return c, nil
}
