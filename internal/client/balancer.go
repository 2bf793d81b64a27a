package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Balancer names how a Client spreads its calls over its addresses.
type Balancer string

// The balancers. PickFirst is today's failover; RoundRobin and P2C keep a
// connection to every address and spread calls over them.
const (
	PickFirst  Balancer = "pick_first"
	RoundRobin Balancer = "round_robin"
	P2C        Balancer = "p2c"
)

// balancers lists the valid Config.Balancer values, "" aside.
var balancers = []Balancer{PickFirst, RoundRobin, P2C}

// passOver is how long an address is passed over after a dial to it
// failed or its connection was lost: long enough that the calls of the
// moment go elsewhere rather than each paying a failed dial, short
// enough that a restarted server is tried again soon.
const passOver = time.Second

// ErrNoAddress is the cause of an attempt made when the client has no
// address to send to.
var ErrNoAddress = errors.New("client: no server address")

// validateBalancer is Validate's part for Balancer and WarmUp.
func (c *Config) validateBalancer() error {
	switch {
	case c.Balancer != "" && !slices.Contains(balancers, c.Balancer):
		return fmt.Errorf("%w: Balancer %q unknown, want one of %q", ErrConfig, c.Balancer, balancers)
	case c.WarmUp < 0:
		return fmt.Errorf("%w: WarmUp %v must not be negative", ErrConfig, c.WarmUp)
	case c.WarmUp > 0 && !c.spreads():
		return fmt.Errorf("%w: WarmUp %v needs Balancer %s or %s", ErrConfig, c.WarmUp, RoundRobin, P2C)
	case c.ConnPerCall && c.spreads():
		return fmt.Errorf("%w: ConnPerCall needs Balancer %s", ErrConfig, PickFirst)
	}
	return nil
}

// spreads reports whether the balancer keeps a connection per address.
func (c *Config) spreads() bool { return c.Balancer == RoundRobin || c.Balancer == P2C }

// balancer keeps one endpoint per address and chooses among them for
// each attempt (pick). A Client has one with RoundRobin, P2C, or a
// resolver; without, it fails over through its ring.
type balancer struct {
	c      *Client
	policy Balancer
	warmUp time.Duration
	// next is the round robin's counter.
	next atomic.Uint64
	// onDown, if set, is told that an address failed: the resolver's
	// nudge to resolve again soon.
	onDown func()

	// mu guards eps, dropped and closed. An attempt takes its
	// endpoint's in-flight count under it, so that an address dropped by
	// update is never taken after it was dropped.
	mu  sync.Mutex
	eps []*endpoint
	// dropped are the endpoints update dropped, whose connections may
	// still be open for their attempts in flight: close closes them too.
	dropped []*endpoint
	closed  bool
}

// endpoint is one address and its connection.
type endpoint struct {
	addr string
	// inFlight counts the attempts that took this endpoint and have not
	// ended.
	inFlight atomic.Int64
	// retired is set once update dropped the address: its connection
	// closes when inFlight reaches 0.
	retired atomic.Bool
	// dialSem is held while a connection is dialed, so that concurrent
	// attempts share one dial.
	dialSem chan struct{}

	// mu guards cn, draining, dialedAt, downUntil and shut.
	mu sync.Mutex
	cn *conn
	// draining are connections the server drained, taken off cn: open
	// for the answers the server took until it closes them, and closed
	// with the endpoint.
	draining  []*conn
	dialedAt  time.Time // when cn was dialed, for WarmUp
	downUntil time.Time // passed over until then
	shut      bool      // closed for good: retired and idle, or Client.Close
}

func newBalancer(c *Client, policy Balancer, addrs []string) *balancer {
	if policy == "" {
		policy = PickFirst
	}
	b := &balancer{c: c, policy: policy, warmUp: c.cfg.WarmUp}
	b.update(addrs)
	return b
}

func newEndpoint(addr string) *endpoint {
	return &endpoint{addr: addr, dialSem: make(chan struct{}, 1)}
}

// addrs returns the addresses in use, in order.
func (b *balancer) addrs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, len(b.eps))
	for i, ep := range b.eps {
		out[i] = ep.addr
	}
	return out
}

// update makes addrs the addresses in use. An address kept keeps its
// connection; a new one is dialed when first taken; a dropped one is
// taken no more, and its connection closes once its attempts in flight
// have ended.
func (b *balancer) update(addrs []string) {
	b.mu.Lock()
	old := make(map[string]*endpoint, len(b.eps))
	for _, ep := range b.eps {
		old[ep.addr] = ep
	}
	eps := make([]*endpoint, 0, len(addrs))
	for _, a := range addrs {
		ep, ok := old[a]
		if !ok {
			ep = newEndpoint(a)
		}
		delete(old, a)
		eps = append(eps, ep)
	}
	b.eps = eps
	b.dropped = slices.DeleteFunc(b.dropped, (*endpoint).isShut)
	for _, ep := range old {
		b.dropped = append(b.dropped, ep)
	}
	b.mu.Unlock()
	for _, ep := range old {
		ep.retired.Store(true)
		if ep.inFlight.Load() == 0 {
			ep.close()
		}
	}
}

// acquire chooses the endpoint for an attempt that must have its
// connection by deadline, the previous attempt of the call having gone to
// previous ("" for none), and returns it with its connection, and
// whether it was dialed for this attempt. A returned endpoint, with or
// without a connection, must be given back to release when the attempt
// ends.
func (b *balancer) acquire(ctx context.Context, deadline time.Time, previous string) (*endpoint, *conn, bool, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, nil, false, ErrClosed
	}
	now := time.Now()
	cs := make([]candidate, len(b.eps))
	for i, ep := range b.eps {
		cs[i] = ep.candidate(now, b.warmUp)
		cs[i].previous = ep.addr == previous
	}
	i := pick(b.policy, cs, b.next.Add(1)-1, draws{intN: rand.IntN, coin: rand.Float64()})
	if i < 0 {
		b.mu.Unlock()
		return nil, nil, false, ErrNoAddress
	}
	ep := b.eps[i]
	ep.inFlight.Add(1)
	b.mu.Unlock()
	cn, dialed, err := b.conn(ctx, ep, deadline)
	return ep, cn, dialed, err
}

// release ends an attempt that acquire gave ep.
func (b *balancer) release(ep *endpoint) {
	if ep.inFlight.Add(-1) == 0 && ep.retired.Load() {
		ep.close()
	}
}

// candidate describes ep to pick at now.
func (ep *endpoint) candidate(now time.Time, warmUp time.Duration) candidate {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	c := candidate{inFlight: ep.inFlight.Load(), weight: 1, passedOver: now.Before(ep.downUntil)}
	// An address without a live connection weighs 1: it is dialed when
	// taken, and starts warming up then. Weighed as a warming one it
	// would, under load, never win the draw that dials it.
	if warmUp > 0 && ep.cn != nil && !ep.cn.dead.Load() {
		c.weight = warmWeight(now.Sub(ep.dialedAt), warmUp)
	}
	return c
}

// drained takes a connection the server drained off ep, so that the next
// attempt on the address dials anew rather than meet a connection that
// takes nothing, and passes the address over: its server is going away.
// The connection stays open for the answers the server took.
func (b *balancer) drained(ep *endpoint, cn *conn) {
	ep.mu.Lock()
	if ep.cn == cn {
		ep.cn = nil
	}
	ep.draining = slices.DeleteFunc(ep.draining, func(d *conn) bool { return d.dead.Load() })
	ep.draining = append(ep.draining, cn)
	shut := ep.shut
	ep.mu.Unlock()
	if shut {
		cn.close()
		return
	}
	b.down(ep)
}

// down passes ep over for passOver from now, and tells the resolver.
func (b *balancer) down(ep *endpoint) {
	ep.mu.Lock()
	ep.downUntil = time.Now().Add(passOver)
	ep.mu.Unlock()
	if b.onDown != nil {
		b.onDown()
	}
}

// conn returns ep's live connection, dialing one if needed, and whether
// it dialed; a dial gives up at deadline.
func (b *balancer) conn(ctx context.Context, ep *endpoint, deadline time.Time) (*conn, bool, error) {
	if cn, err := ep.live(); cn != nil || err != nil {
		return cn, false, err
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	select {
	case ep.dialSem <- struct{}{}:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	defer func() { <-ep.dialSem }()
	if cn, err := ep.live(); cn != nil || err != nil {
		return cn, false, err
	}
	d := net.Dialer{Control: b.c.control}
	nc, err := d.DialContext(ctx, "tcp", ep.addr)
	if err != nil {
		if !errors.Is(ctx.Err(), context.Canceled) {
			b.down(ep)
		}
		return nil, false, err
	}
	b.c.stats.connsOpened.Add(1)
	cfg := b.c.cfg
	user := cfg.OnConnLost
	cfg.OnConnLost = func(addr string, err error) {
		b.down(ep)
		if user != nil {
			user(addr, err)
		}
	}
	cn := newConn(nc, &b.c.stats, &cfg, ep.addr, 0, func(cn *conn) { b.drained(ep, cn) })
	ep.mu.Lock()
	if ep.shut {
		ep.mu.Unlock()
		cn.close()
		return nil, false, ErrClosed
	}
	old := ep.cn
	ep.cn, ep.dialedAt = cn, time.Now()
	ep.mu.Unlock()
	if old != nil {
		go old.close() // already dead; reap its goroutines
	}
	return cn, true, nil
}

// live returns ep's connection if it is alive, nil if there is none,
// and ErrClosed once ep is shut.
func (ep *endpoint) live() (*conn, error) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.shut {
		return nil, ErrClosed
	}
	if ep.cn != nil && !ep.cn.dead.Load() {
		return ep.cn, nil
	}
	return nil, nil
}

func (ep *endpoint) isShut() bool {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.shut
}

// close shuts ep for good, closing its connection; a second close does
// nothing.
func (ep *endpoint) close() {
	ep.mu.Lock()
	cns := append(ep.draining, ep.cn)
	ep.cn, ep.draining, ep.shut = nil, nil, true
	ep.mu.Unlock()
	for _, cn := range cns {
		if cn != nil {
			cn.close()
		}
	}
}

// close shuts every endpoint, failing the attempts on them with
// ErrClosed; later attempts fail with ErrClosed.
func (b *balancer) close() {
	b.mu.Lock()
	b.closed = true
	eps := append(b.eps, b.dropped...)
	b.eps, b.dropped = nil, nil
	b.mu.Unlock()
	for _, ep := range eps {
		ep.close()
	}
}

// cut fails every endpoint's connection with ErrCut, as Client.Cut.
func (b *balancer) cut() {
	b.mu.Lock()
	eps := slices.Clone(b.eps)
	b.mu.Unlock()
	for _, ep := range eps {
		if cn, _ := ep.live(); cn != nil {
			cn.fail(ErrCut)
		}
	}
}

// Addrs returns the addresses the client sends to now, in order: those
// it was given, or those its resolver last found.
func (c *Client) Addrs() []string {
	if c.bal == nil {
		return slices.Clone(c.addrs.addrs)
	}
	return c.bal.addrs()
}
