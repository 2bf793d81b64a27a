package client

import (
	"fmt"
	"sync/atomic"
)

// ring is a Client's server addresses and which one it uses now. The
// client dials only the current address; a failure of it moves the client
// on to the next, wrapping around.
type ring struct {
	addrs []string // fixed after newRing: at least one, each non-empty, no two equal
	// gen counts the moves so far; the current address is
	// addrs[gen%len(addrs)]. Every connection remembers the gen it was
	// dialed under, so that many callers reporting the same failure move
	// the client once: only the first report finds gen unchanged.
	gen atomic.Uint64
}

func newRing(addrs []string) (*ring, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: no server address", ErrConfig)
	}
	seen := make(map[string]bool, len(addrs))
	for i, a := range addrs {
		if a == "" {
			return nil, fmt.Errorf("%w: server address %d is empty", ErrConfig, i)
		}
		if seen[a] {
			return nil, fmt.Errorf("%w: server address %q listed twice", ErrConfig, a)
		}
		seen[a] = true
	}
	return &ring{addrs: append([]string(nil), addrs...)}, nil
}

// current returns the address to dial and the gen it belongs to.
func (r *ring) current() (string, uint64) {
	g := r.gen.Load()
	return r.addrs[g%uint64(len(r.addrs))], g
}

// moveOn moves from the address of gen g to the next one, unless the
// client has already moved since g: a failure is reported by every
// caller that met it, and must count once.
func (r *ring) moveOn(g uint64) {
	if len(r.addrs) > 1 {
		r.gen.CompareAndSwap(g, g+1)
	}
}

// moves is how many times the current address changed.
func (r *ring) moves() int64 { return int64(r.gen.Load()) }
