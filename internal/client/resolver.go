package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// DNS says where NewDNS finds a service's instances.
type DNS struct {
	// Name is the name to resolve. With Port 0 it names SRV records
	// (such as "_rpc._tcp.bank.default.svc.cluster.local."), each of
	// whose targets is resolved to its A and AAAA records, at the SRV's
	// port. With Port set it is a host name whose A and AAAA records are
	// the instances, each at Port: a Kubernetes headless service. A name
	// ending in a dot is not searched in resolv.conf's domains.
	Name string
	// Port is the instances' port for A and AAAA records; 0 asks for SRV.
	Port int
	// Server is the DNS server to ask, host:port; empty asks the
	// system's (resolv.conf).
	Server string
	// Every is the period of re-resolution; zero means 30s. The records'
	// TTLs are not read.
	Every time.Duration
	// Timeout bounds one resolution; zero means 2s.
	Timeout time.Duration
}

// Defaults of DNS.
const (
	DefaultResolveEvery   = 30 * time.Second
	DefaultResolveTimeout = 2 * time.Second
	// minReresolve is the least time between two resolutions that a
	// failed connection asks for: every attempt on a dead server nudges
	// the resolver, which must not turn that into a query storm.
	minReresolve = 200 * time.Millisecond
)

// ErrResolve is wrapped by NewDNS's error when its first resolution finds
// no address.
var ErrResolve = errors.New("client: resolve")

func (d *DNS) validate() error {
	switch {
	case d.Name == "":
		return fmt.Errorf("%w: DNS.Name is empty", ErrConfig)
	case d.Port < 0 || d.Port > 65535:
		return fmt.Errorf("%w: DNS.Port %d outside [0,65535]", ErrConfig, d.Port)
	case d.Every < 0:
		return fmt.Errorf("%w: DNS.Every %v must not be negative", ErrConfig, d.Every)
	case d.Timeout < 0:
		return fmt.Errorf("%w: DNS.Timeout %v must not be negative", ErrConfig, d.Timeout)
	}
	if d.Server != "" {
		if _, _, err := net.SplitHostPort(d.Server); err != nil {
			return fmt.Errorf("%w: DNS.Server %q: %w", ErrConfig, d.Server, err)
		}
	}
	return nil
}

// NewDNS validates d and cfg, resolves d once and returns a Client of the
// addresses found, balanced by cfg.Balancer (pick_first by default,
// over the addresses in sorted order). It fails, wrapping ErrResolve, when
// that first resolution fails or finds none.
//
// The client resolves again every d.Every, and soon after a dial fails or
// a connection is lost (at most once per 200ms for those). A
// resolution that fails, or finds no address, keeps the addresses it
// had: it is counted in Stats.ResolveFailures or Stats.ResolveEmpty.
// One that finds a changed set replaces it: a new address is dialed when
// first taken; a dropped one is taken no more, and its connection closes
// once the attempts on it have ended.
func NewDNS(d DNS, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := d.validate(); err != nil {
		return nil, err
	}
	r := newResolver(d)
	ctx, cancel := context.WithTimeout(context.Background(), r.d.Timeout)
	addrs, err := r.lookup(ctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrResolve, d.Name, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: %s: no address", ErrResolve, d.Name)
	}
	c, err := NewMulti(addrs, cfg)
	if err != nil {
		return nil, err
	}
	if c.bal == nil {
		c.bal = newBalancer(c, cfg.Balancer, addrs)
	}
	r.bal = c.bal
	c.bal.onDown = r.nudge
	c.res = r
	go r.loop()
	return c, nil
}

// resolver re-resolves a DNS name for a balancer.
type resolver struct {
	d   DNS
	net *net.Resolver
	bal *balancer

	resolutions, failures, empty atomic.Int64

	kick   chan struct{} // capacity 1: resolve soon
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when loop returns
}

func newResolver(d DNS) *resolver {
	if d.Every == 0 {
		d.Every = DefaultResolveEvery
	}
	if d.Timeout == 0 {
		d.Timeout = DefaultResolveTimeout
	}
	r := &resolver{d: d, net: net.DefaultResolver, kick: make(chan struct{}, 1), done: make(chan struct{})}
	if d.Server != "" {
		server := d.Server
		r.net = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var nd net.Dialer
			return nd.DialContext(ctx, network, server)
		}}
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

// nudge asks for a resolution soon; it never blocks.
func (r *resolver) nudge() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// stop ends the loop and waits for it.
func (r *resolver) stop() {
	r.cancel()
	<-r.done
}

// loop resolves every d.Every, and when nudged, no sooner than
// minReresolve after the resolution before.
func (r *resolver) loop() {
	defer close(r.done)
	tick := time.NewTicker(r.d.Every)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-tick.C:
		case <-r.kick:
			if wait := minReresolve - time.Since(last); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-r.ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
		}
		ctx, cancel := context.WithTimeout(r.ctx, r.d.Timeout)
		addrs, err := r.lookup(ctx)
		cancel()
		if r.ctx.Err() != nil {
			return
		}
		r.apply(addrs, err)
		last = time.Now()
	}
}

// apply is what a resolution's result does: a failure or an empty set
// keeps the addresses in use and is counted; any other set replaces them.
func (r *resolver) apply(addrs []string, err error) {
	switch {
	case err != nil:
		r.failures.Add(1)
		return
	case len(addrs) == 0:
		r.empty.Add(1)
		return
	}
	r.resolutions.Add(1)
	r.bal.update(addrs)
}

// lookup resolves d to host:port addresses, sorted, with no two equal.
// A name with no records, or SRV targets none of which has an address,
// is an empty set and no error.
func (r *resolver) lookup(ctx context.Context) ([]string, error) {
	var out []string
	if r.d.Port > 0 {
		ips, err := r.hosts(ctx, r.d.Name)
		if err != nil {
			return nil, err
		}
		for _, ip := range ips {
			out = append(out, net.JoinHostPort(ip, strconv.Itoa(r.d.Port)))
		}
	} else {
		_, srvs, err := r.net.LookupSRV(ctx, "", "", r.d.Name)
		if notFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		for _, s := range srvs {
			ips, err := r.hosts(ctx, s.Target)
			if err != nil {
				return nil, err
			}
			for _, ip := range ips {
				out = append(out, net.JoinHostPort(ip, strconv.Itoa(int(s.Port))))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// hosts returns name's addresses; none, without error, when it has none.
func (r *resolver) hosts(ctx context.Context, name string) ([]string, error) {
	ips, err := r.net.LookupHost(ctx, name)
	if notFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ips, nil
}

// count returns one of r's counters, 0 for a client without a resolver.
func (r *resolver) count(n func(*resolver) *atomic.Int64) int64 {
	if r == nil {
		return 0
	}
	return n(r).Load()
}

func notFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}
