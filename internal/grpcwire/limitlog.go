package grpcwire

import (
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// limitLog logs serverapi.EventLimit for the refusals of each limit, at
// most once per interval per limit, so that a peer that trips a limit a
// million times costs a line a second, not a million: the first refusal
// after a quiet interval logs at once (count=1); later ones are counted,
// and logged together (count=N) by a timer when the interval since the
// last LIMIT of that limit has passed, or by close. Its methods are safe
// for concurrent use. It knows nothing of HTTP/2: a transport makes one
// per wire and calls note where a limit refuses.
type limitLog struct {
	log      *slog.Logger
	interval time.Duration
	attrs    []any // logged after limit and count, e.g. the wire

	mu     sync.Mutex // guards limits, closed
	limits map[string]*limitState
	closed bool
}

// limitState is one limit's refusals not yet logged.
type limitState struct {
	last    time.Time   // when its last LIMIT was logged
	pending int64       // refusals since
	timer   *time.Timer // set while pending refusals wait for the interval to pass
}

// newLimitLog returns a limitLog writing to log; attrs follow limit and
// count in every event.
func newLimitLog(log *slog.Logger, interval time.Duration, attrs ...any) *limitLog {
	return &limitLog{log: log, interval: interval, attrs: attrs, limits: make(map[string]*limitState)}
}

// note counts one refusal by limit (a flag name without its dash).
func (l *limitLog) note(limit string) {
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
func (l *limitLog) flush(limit string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.limits[limit]
	st.timer = nil
	if !l.closed {
		l.emit(limit, st)
	}
}

// emit logs st's pending refusals, if any; the caller holds l.mu.
func (l *limitLog) emit(limit string, st *limitState) {
	if st.pending == 0 {
		return
	}
	l.log.Warn(serverapi.EventLimit, append([]any{serverapi.KeyLimit, limit, serverapi.KeyCount, st.pending}, l.attrs...)...)
	st.pending, st.last = 0, time.Now()
}

// close logs every limit's pending refusals and stops the timers; later
// refusals are counted and never logged.
func (l *limitLog) close() {
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
