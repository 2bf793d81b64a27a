// Package dnszone is an authoritative DNS server on loopback for one zone
// whose records a test changes while it runs.
package dnszone

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/miekg/dns"
)

// TTL is the time to live of every record served, in seconds. Go's
// resolver caches nothing, so it matters only to other resolvers.
const TTL = 1

// SRV is one SRV record's target and port; priority and weight are 0.
type SRV struct {
	Target string
	Port   uint16
}

// ErrStopped is returned by Stop on a stopped server and by Restart on a
// running one.
var ErrStopped = errors.New("dnszone: not running")

// Server answers queries for its zone over UDP and TCP on one loopback
// port. Every answer it gives for a name in the zone is authoritative
// (the AA bit set), an empty one included: Go's resolver takes an empty
// answer without AA (and without recursion available) for a lame
// referral, and an error, not for "no such records". A name outside the
// zone is refused.
type Server struct {
	zone string
	addr string // host:port, fixed by Start; Restart binds it again

	// mu guards records, udp and tcp.
	mu      sync.Mutex
	records map[rrKey][]dns.RR
	udp     *dns.Server // nil while stopped
	tcp     *dns.Server

	queries atomic.Int64
}

type rrKey struct {
	name  string // lower case, fully qualified
	qtype uint16
}

// Start serves zone (such as "rpcbench.test") on a loopback port the
// kernel picks, the same for UDP and TCP. It has no records to begin
// with. The caller must Stop it.
func Start(zone string) (*Server, error) {
	s := &Server{zone: dns.CanonicalName(zone), records: map[rrKey][]dns.RR{}}
	// A free UDP port may be taken for TCP; try a few.
	var err error
	for range 10 {
		var pc net.PacketConn
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("dnszone: %w", err)
		}
		var ln net.Listener
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err != nil {
			pc.Close()
			continue
		}
		s.addr = pc.LocalAddr().String()
		if err = s.serve(pc, ln); err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("dnszone: no port free for both UDP and TCP: %w", err)
}

// Addr returns the host:port the server answers on, over UDP and TCP.
func (s *Server) Addr() string { return s.addr }

// Queries counts the queries answered so far, over both transports.
func (s *Server) Queries() int64 { return s.queries.Load() }

// serve starts serving on pc and ln and returns once both serve.
func (s *Server) serve(pc net.PacketConn, ln net.Listener) error {
	h := dns.HandlerFunc(s.answer)
	udp := &dns.Server{PacketConn: pc, Handler: h}
	tcp := &dns.Server{Listener: ln, Handler: h}
	for _, srv := range []*dns.Server{udp, tcp} {
		started := make(chan struct{})
		failed := make(chan error, 1)
		srv.NotifyStartedFunc = func() { close(started) }
		go func() { failed <- srv.ActivateAndServe() }()
		select {
		case <-started:
		case err := <-failed:
			udp.Shutdown()
			pc.Close()
			ln.Close()
			return fmt.Errorf("dnszone: serve: %w", err)
		}
	}
	s.mu.Lock()
	s.udp, s.tcp = udp, tcp
	s.mu.Unlock()
	return nil
}

// Stop stops answering and releases the port: a query then meets a
// closed port (refused over UDP and TCP alike). Records are kept for
// Restart.
func (s *Server) Stop() error {
	s.mu.Lock()
	udp, tcp := s.udp, s.tcp
	s.udp, s.tcp = nil, nil
	s.mu.Unlock()
	if udp == nil {
		return ErrStopped
	}
	return errors.Join(udp.Shutdown(), tcp.Shutdown())
}

// Restart serves again on the address Start chose, with the records set
// meanwhile. It fails if the port was taken while the server was stopped.
func (s *Server) Restart() error {
	s.mu.Lock()
	running := s.udp != nil
	s.mu.Unlock()
	if running {
		return fmt.Errorf("dnszone: restart: already running")
	}
	pc, err := net.ListenPacket("udp", s.addr)
	if err != nil {
		return fmt.Errorf("dnszone: restart: %w", err)
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		pc.Close()
		return fmt.Errorf("dnszone: restart: %w", err)
	}
	return s.serve(pc, ln)
}

// SetSRV replaces name's SRV records with srvs; none leaves the name
// with an empty, authoritative answer for SRV. Targets are taken as
// fully qualified.
func (s *Server) SetSRV(name string, srvs ...SRV) error {
	n, err := s.inZone(name)
	if err != nil {
		return err
	}
	rrs := make([]dns.RR, 0, len(srvs))
	for _, v := range srvs {
		rrs = append(rrs, &dns.SRV{Hdr: hdr(n, dns.TypeSRV), Target: dns.Fqdn(v.Target), Port: v.Port})
	}
	s.set(rrKey{n, dns.TypeSRV}, rrs)
	return nil
}

// SetHost replaces name's A and AAAA records with addrs, each an A or an
// AAAA record by its family; none leaves it with empty answers.
func (s *Server) SetHost(name string, addrs ...netip.Addr) error {
	n, err := s.inZone(name)
	if err != nil {
		return err
	}
	var a, aaaa []dns.RR
	for _, ip := range addrs {
		if ip.Is4() {
			a = append(a, &dns.A{Hdr: hdr(n, dns.TypeA), A: ip.AsSlice()})
		} else {
			aaaa = append(aaaa, &dns.AAAA{Hdr: hdr(n, dns.TypeAAAA), AAAA: ip.AsSlice()})
		}
	}
	s.set(rrKey{n, dns.TypeA}, a)
	s.set(rrKey{n, dns.TypeAAAA}, aaaa)
	return nil
}

func (s *Server) set(k rrKey, rrs []dns.RR) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[k] = rrs
}

func hdr(name string, t uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: TTL}
}

func (s *Server) inZone(name string) (string, error) {
	n := dns.CanonicalName(name)
	if !dns.IsSubDomain(s.zone, n) {
		return "", fmt.Errorf("dnszone: %q is not in zone %q", name, s.zone)
	}
	return n, nil
}

// answer serves one query. A name never set is NXDOMAIN; one set, but
// with no record of the type asked (SetHost or SetSRV with none), gets
// an empty NOERROR. Both are authoritative, with the zone's SOA.
func (s *Server) answer(w dns.ResponseWriter, q *dns.Msg) {
	s.queries.Add(1)
	m := new(dns.Msg)
	m.SetReply(q)
	if len(q.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		w.WriteMsg(m)
		return
	}
	qn := dns.CanonicalName(q.Question[0].Name)
	if !dns.IsSubDomain(s.zone, qn) {
		m.Rcode = dns.RcodeRefused
		w.WriteMsg(m)
		return
	}
	m.Authoritative = true
	s.mu.Lock()
	known := false
	for k := range s.records {
		known = known || k.name == qn
	}
	for _, rr := range s.records[rrKey{qn, q.Question[0].Qtype}] {
		m.Answer = append(m.Answer, dns.Copy(rr))
	}
	s.mu.Unlock()
	if len(m.Answer) == 0 {
		if !known && !strings.EqualFold(qn, s.zone) {
			m.Rcode = dns.RcodeNameError
		}
		m.Ns = []dns.RR{&dns.SOA{Hdr: hdr(s.zone, dns.TypeSOA), Ns: "ns." + s.zone, Mbox: "hostmaster." + s.zone,
			Serial: 1, Refresh: 60, Retry: 60, Expire: 60, Minttl: TTL}}
	}
	w.WriteMsg(m)
}
