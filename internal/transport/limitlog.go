package transport

import (
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// LimitLog logs serverapi.EventLimit for the refusals of each limit, at
// most once per interval per limit, so that a peer that trips a limit a
// million times costs a line a second, not a million: the first refusal
// after a quiet interval logs at once (count=1); later ones are counted,
// and logged together (count=N) by a timer when the interval since the
// last LIMIT of that limit has passed, or by Close. Its methods are safe
// for concurrent use, and may be called with the caller's own locks
// held: none calls back. A transport makes one per wire and calls Note
// where a limit refuses.
type LimitLog struct {
	log      *slog.Logger
	interval time.Duration
	attrs    []any // logged after limit and count, e.g. the wire

	mu     sync.Mutex // guards limits, closed
	limits map[string]*limitState
	closed bool
}

// LimitLogInterval is how often a limit's refusals may log a LIMIT on
// either wire: serverapi.EventLimit's "at most once a second".
const LimitLogInterval = time.Second

// limitState is one limit's refusals not yet logged.
type limitState struct {
	last    time.Time   // when its last LIMIT was logged
	pending int64       // refusals since
	timer   *time.Timer // set while pending refusals wait for the interval to pass
}

// NewLimitLog returns a LimitLog writing to log, at most one LIMIT per
// interval per limit; attrs (key-value pairs, as slog takes them)
// follow limit and count in every event.
func NewLimitLog(log *slog.Logger, interval time.Duration, attrs ...any) *LimitLog {
	return &LimitLog{log: log, interval: interval, attrs: attrs, limits: make(map[string]*limitState)}
}

// Note counts one refusal by limit, the name of its flag without the
// dash.
func (l *LimitLog) Note(limit string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.limits[limit]
	if st == nil {
		st = &limitState{}
		l.limits[limit] = st
	}
	st.pending++
	if l.closed || st.timer != nil {
		return
	}
	if wait := l.interval - time.Since(st.last); wait > 0 {
		st.timer = time.AfterFunc(wait, func() { l.flush(limit) })
		return
	}
	l.emit(limit, st)
}

// flush logs limit's pending refusals: the timer's end.
func (l *LimitLog) flush(limit string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.limits[limit]
	st.timer = nil
	if !l.closed {
		l.emit(limit, st)
	}
}

// emit logs st's pending refusals, if any; the caller holds l.mu.
func (l *LimitLog) emit(limit string, st *limitState) {
	if st.pending == 0 {
		return
	}
	l.log.Warn(serverapi.EventLimit, append([]any{serverapi.KeyLimit, limit, serverapi.KeyCount, st.pending}, l.attrs...)...)
	st.pending, st.last = 0, time.Now()
}

// Close logs every limit's pending refusals, in the order of their
// names, and stops the timers; later refusals are counted and never
// logged. Closing twice does nothing.
func (l *LimitLog) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	for _, limit := range slices.Sorted(maps.Keys(l.limits)) {
		st := l.limits[limit]
		if st.timer != nil {
			st.timer.Stop()
			st.timer = nil
		}
		l.emit(limit, st)
	}
}
