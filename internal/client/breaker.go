package client

import (
	"fmt"
	"sync"
	"time"
)

// breakerState is a circuit breaker's state.
type breakerState uint8

const (
	breakerClosed breakerState = iota
	breakerOpen
	breakerHalfOpen
)

var breakerStateNames = [...]string{breakerClosed: "closed", breakerOpen: "open", breakerHalfOpen: "half-open"}

func (s breakerState) String() string {
	if int(s) < len(breakerStateNames) {
		return breakerStateNames[s]
	}
	return fmt.Sprintf("unknown_breaker_state_%d", uint8(s))
}

// bucket counts the attempts that ended within one Bucket of the window.
type bucket struct{ calls, failed, slow uint32 }

func (b *bucket) add(o bucket) { b.calls += o.calls; b.failed += o.failed; b.slow += o.slow }
func (b *bucket) sub(o bucket) { b.calls -= o.calls; b.failed -= o.failed; b.slow -= o.slow }

// breaker is the circuit breaker of BreakerConfig. Its methods take the
// time from the caller, so that tests can drive it on a clock of their
// own; the Client passes time.Now().
//
// It is written here rather than taken from gobreaker: gobreaker asks
// whether to trip only when an attempt fails, so slow attempts that
// succeed could never open it, and its counts have no slow dimension.
type breaker struct {
	cfg BreakerConfig

	// mu guards everything below.
	mu sync.Mutex
	st breakerState
	// gen counts state changes. An attempt reports under the gen it was
	// let through in; a report from an earlier gen is ignored, so that
	// attempts that began before the breaker opened or closed do not
	// count in the new state.
	gen uint64
	// until is when an open breaker turns half-open.
	until time.Time
	// probes counts the attempts let through while half-open, passed
	// those of them that succeeded.
	probes, passed uint32

	// The window, counted while closed: a ring of buckets, ring[i%len]
	// holding the attempts that ended during the i-th Bucket since epoch.
	// head is the newest bucket's i; total sums the ring.
	epoch time.Time
	ring  []bucket
	head  int64
	total bucket
}

func newBreaker(cfg BreakerConfig, now time.Time) *breaker {
	n := (cfg.Window + cfg.Bucket - 1) / cfg.Bucket
	return &breaker{cfg: cfg, epoch: now, ring: make([]bucket, n)}
}

// ticket is what an attempt the breaker let through reports with.
type ticket struct {
	gen   uint64
	probe bool
}

// allow asks whether an attempt may start at now; if so the attempt must
// report its end to done with the ticket.
func (b *breaker) allow(now time.Time) (ticket, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.advance(now) {
	case breakerClosed:
		return ticket{gen: b.gen}, true
	case breakerHalfOpen:
		if b.probes < b.cfg.Probes {
			b.probes++
			return ticket{gen: b.gen, probe: true}, true
		}
	}
	return ticket{}, false
}

// done records the end, at now, of an attempt that took took.
func (b *breaker) done(t ticket, v verdict, took time.Duration, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.advance(now); t.gen != b.gen {
		return
	}
	slow := b.cfg.SlowRate > 0 && took > b.cfg.SlowCall
	switch {
	case b.st == breakerHalfOpen && v == verdictExcluded:
		b.probes-- // the probe said nothing; another may take its place
	case b.st == breakerHalfOpen && (v == verdictFailure || slow):
		b.set(breakerOpen, now)
	case b.st == breakerHalfOpen:
		if b.passed++; b.passed >= b.cfg.Probes {
			b.set(breakerClosed, now)
		}
	case b.st == breakerClosed && v != verdictExcluded:
		o := bucket{calls: 1}
		if v == verdictFailure {
			o.failed = 1
		}
		if slow {
			o.slow = 1
		}
		b.ring[b.head%int64(len(b.ring))].add(o)
		b.total.add(o)
		if b.tripped() {
			b.set(breakerOpen, now)
		}
	}
}

// tripped reports whether the window meets a condition to open.
func (b *breaker) tripped() bool {
	n := float64(b.total.calls)
	return b.total.calls >= b.cfg.MinCalls &&
		(b.cfg.FailureRate > 0 && float64(b.total.failed) >= b.cfg.FailureRate*n ||
			b.cfg.SlowRate > 0 && float64(b.total.slow) >= b.cfg.SlowRate*n)
}

// state returns the state at now.
func (b *breaker) state(now time.Time) breakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.advance(now)
}

// advance brings the breaker to now: an open breaker past its OpenFor
// turns half-open, and a closed one's window drops the buckets that
// slid out of it. It returns the state.
func (b *breaker) advance(now time.Time) breakerState {
	switch b.st {
	case breakerOpen:
		if !now.Before(b.until) {
			b.set(breakerHalfOpen, now)
		}
	case breakerClosed:
		i := int64(now.Sub(b.epoch) / b.cfg.Bucket)
		if i <= b.head {
			return b.st
		}
		if i-b.head >= int64(len(b.ring)) {
			clear(b.ring)
			b.total = bucket{}
		} else {
			for j := b.head + 1; j <= i; j++ {
				old := &b.ring[j%int64(len(b.ring))]
				b.total.sub(*old)
				*old = bucket{}
			}
		}
		b.head = i
	}
	return b.st
}

// set moves the breaker to st at now, starting a new gen; closing it
// starts an empty window.
func (b *breaker) set(st breakerState, now time.Time) {
	b.st = st
	b.gen++
	b.probes, b.passed = 0, 0
	switch st {
	case breakerOpen:
		b.until = now.Add(b.cfg.OpenFor)
	case breakerClosed:
		clear(b.ring)
		b.total = bucket{}
		b.epoch, b.head = now, 0
	}
}
