package client_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/dnszone"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

const (
	zoneName = "rpcbench.test"
	srvName  = "_rpc._tcp.bank.rpcbench.test."
	hostName = "bank.rpcbench.test."
)

func startZone(t *testing.T) *dnszone.Server {
	t.Helper()
	z, err := dnszone.Start(zoneName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Stop() })
	return z
}

// instance is an in-process server and its port.
type instance struct {
	srv  *server.Server
	addr string
	port uint16
}

func startInstances(t *testing.T, n int) []instance {
	t.Helper()
	var out []instance
	for range n {
		s, a := servertest.Start(t, server.DefaultConfig())
		ap := netip.MustParseAddrPort(a)
		out = append(out, instance{s, a, ap.Port()})
	}
	return out
}

// publish sets the zone's SRV records to ins, each instance a target of
// its own (i<n>.rpcbench.test, 127.0.0.1).
func publish(t *testing.T, z *dnszone.Server, ins ...instance) {
	t.Helper()
	var srvs []dnszone.SRV
	for _, in := range ins {
		target := "i" + strconv.Itoa(int(in.port)) + "." + zoneName + "."
		if err := z.SetHost(target, netip.MustParseAddr("127.0.0.1")); err != nil {
			t.Fatal(err)
		}
		srvs = append(srvs, dnszone.SRV{Target: target, Port: in.port})
	}
	if err := z.SetSRV(srvName, srvs...); err != nil {
		t.Fatal(err)
	}
}

func addrsOf(ins ...instance) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.addr)
	}
	slices.Sort(out)
	return out
}

func newDNS(t *testing.T, d client.DNS, b client.Balancer) *client.Client {
	t.Helper()
	cfg := servertest.ClientConfig()
	cfg.Balancer = b
	c, err := client.NewDNS(d, cfg)
	if err != nil {
		t.Fatalf("NewDNS: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func getsOK(t *testing.T, c *client.Client, n int) {
	t.Helper()
	for i := range n {
		if r := c.Do(context.Background(), servertest.Get("acct")); r.Status.String() != "OK" {
			t.Fatalf("get %d: %v %v", i, r.Status, r.Log)
		}
	}
}

func TestDNSSRV(t *testing.T) {
	z := startZone(t)
	ins := startInstances(t, 2)
	publish(t, z, ins...)
	c := newDNS(t, client.DNS{Name: srvName, Server: z.Addr()}, client.RoundRobin)
	if diff := cmp.Diff(addrsOf(ins...), c.Addrs()); diff != "" {
		t.Fatalf("Addrs (-want +got):\n%s", diff)
	}
	getsOK(t, c, 10)
	for i, in := range ins {
		if got := servertest.Counter(t, in.srv, "exec.get"); got != 5 {
			t.Errorf("instance %d exec.get: got %d, want 5", i, got)
		}
	}
}

func TestDNSHost(t *testing.T) {
	z := startZone(t)
	ins := startInstances(t, 1)
	if err := z.SetHost(hostName, netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Fatal(err)
	}
	c := newDNS(t, client.DNS{Name: hostName, Port: int(ins[0].port), Server: z.Addr()}, client.PickFirst)
	if diff := cmp.Diff(addrsOf(ins...), c.Addrs()); diff != "" {
		t.Fatalf("Addrs (-want +got):\n%s", diff)
	}
	getsOK(t, c, 3)
}

func TestNewDNSErrors(t *testing.T) {
	z := startZone(t)
	if err := z.SetSRV(srvName); err != nil {
		t.Fatal(err)
	}
	cfg := servertest.ClientConfig()
	for _, tt := range []struct {
		name string
		d    client.DNS
		want error
	}{
		{"no name", client.DNS{Server: z.Addr()}, client.ErrConfig},
		{"bad port", client.DNS{Name: hostName, Port: 70000, Server: z.Addr()}, client.ErrConfig},
		{"bad server", client.DNS{Name: hostName, Port: 1, Server: "nowhere"}, client.ErrConfig},
		{"empty answer", client.DNS{Name: srvName, Server: z.Addr()}, client.ErrResolve},
		{"unknown name", client.DNS{Name: "nothing." + zoneName + ".", Port: 1, Server: z.Addr()}, client.ErrResolve},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := client.NewDNS(tt.d, cfg)
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
			if c != nil {
				c.Close()
			}
		})
	}
}

// TestDNSFailureKeepsSnapshot: while the DNS server is down, every
// resolution fails, is counted, and leaves the addresses as they were;
// calls go on reaching them.
func TestDNSFailureKeepsSnapshot(t *testing.T) {
	z := startZone(t)
	ins := startInstances(t, 2)
	publish(t, z, ins...)
	c := newDNS(t, client.DNS{Name: srvName, Server: z.Addr(), Every: 20 * time.Millisecond}, client.P2C)
	if err := z.Stop(); err != nil {
		t.Fatal(err)
	}
	servertest.WaitFor(t, "3 failed resolutions", func() bool { return c.Stats().ResolveFailures >= 3 })
	if diff := cmp.Diff(addrsOf(ins...), c.Addrs()); diff != "" {
		t.Errorf("Addrs after failures (-want +got):\n%s", diff)
	}
	getsOK(t, c, 10)
}

// TestDNSEmptyKeepsSnapshot: an answer with no records keeps the
// addresses, and is counted apart from failures.
func TestDNSEmptyKeepsSnapshot(t *testing.T) {
	z := startZone(t)
	ins := startInstances(t, 2)
	publish(t, z, ins...)
	c := newDNS(t, client.DNS{Name: srvName, Server: z.Addr(), Every: 20 * time.Millisecond}, client.P2C)
	if err := z.SetSRV(srvName); err != nil {
		t.Fatal(err)
	}
	servertest.WaitFor(t, "2 empty resolutions", func() bool { return c.Stats().ResolveEmpty >= 2 })
	if diff := cmp.Diff(addrsOf(ins...), c.Addrs()); diff != "" {
		t.Errorf("Addrs after empty answers (-want +got):\n%s", diff)
	}
	if got := c.Stats().ResolveFailures; got != 0 {
		t.Errorf("ResolveFailures: got %d, want 0: an empty answer is not a failure", got)
	}
	getsOK(t, c, 10)
}

// TestDNSChangedSet: a new instance in the answer is picked up and gets
// calls; a dropped one gets none after, and its connection closes once
// the call it was executing is answered.
func TestDNSChangedSet(t *testing.T) {
	z := startZone(t)
	ins := startInstances(t, 3)
	publish(t, z, ins[0], ins[1])
	c := newDNS(t, client.DNS{Name: srvName, Server: z.Addr(), Every: 20 * time.Millisecond}, client.RoundRobin)
	getsOK(t, c, 4) // a connection to each

	// A slow get in flight on instance 1 when it is dropped.
	slow := make(chan client.Result, 1)
	go func() {
		for {
			r := c.Do(context.Background(), servertest.Get("acct", "sleep=300"))
			if r.Log[len(r.Log)-1].Addr == ins[1].addr {
				slow <- r
				return
			}
		}
	}()
	servertest.WaitFor(t, "a slow get executing on instance 1", func() bool {
		return servertest.Counter(t, ins[1].srv, "requests.get") > 2
	})
	publish(t, z, ins[0], ins[2])
	servertest.WaitFor(t, "the changed set", func() bool { return slices.Equal(c.Addrs(), addrsOf(ins[0], ins[2])) })
	before := servertest.Counter(t, ins[1].srv, "requests.get")
	if r := <-slow; r.Status.String() != "OK" {
		t.Errorf("the get in flight on the dropped instance: %v %v, want OK", r.Status, r.Log)
	}
	servertest.WaitFor(t, "the dropped instance's connection closed", func() bool {
		return servertest.Counter(t, ins[1].srv, "conns_open") == 0
	})
	getsOK(t, c, 10)
	if got := servertest.Counter(t, ins[1].srv, "requests.get") - before; got != 0 {
		t.Errorf("gets sent to the dropped instance after it was dropped: got %d, want 0", got)
	}
	if got := servertest.Counter(t, ins[2].srv, "exec.get"); got < 4 {
		t.Errorf("new instance exec.get: got %d, want at least 4 of 10", got)
	}
	if got := c.Stats().Resolutions; got < 1 {
		t.Errorf("Resolutions: got %d, want at least 1", got)
	}
}

// TestDNSPeriodic: the client asks again every Every, calls or none.
func TestDNSPeriodic(t *testing.T) {
	z := startZone(t)
	publish(t, z, startInstances(t, 1)...)
	newDNS(t, client.DNS{Name: srvName, Server: z.Addr(), Every: 20 * time.Millisecond}, client.PickFirst)
	q := z.Queries()
	servertest.WaitFor(t, "5 more resolutions", func() bool { return z.Queries() >= q+10 }) // an SRV and a host query each
}

// TestDNSAfterConnLost: with a period far longer than the test, a lost
// connection alone makes the client resolve again.
func TestDNSAfterConnLost(t *testing.T) {
	z := startZone(t)
	ins := startInstances(t, 2)
	publish(t, z, ins...)
	c := newDNS(t, client.DNS{Name: srvName, Server: z.Addr(), Every: time.Hour}, client.RoundRobin)
	getsOK(t, c, 2)
	q := z.Queries()
	if err := ins[0].srv.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatal(err)
	}
	servertest.WaitFor(t, "a resolution after the lost connection", func() bool { return z.Queries() > q })
}
