package dnszone_test

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

	"github.com/rpcbench/rpcbench/internal/dnszone"
)

// resolver asks only z, over the network Go's resolver chooses.
func resolver(z *dnszone.Server) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, z.Addr())
	}}
}

func start(t *testing.T) *dnszone.Server {
	t.Helper()
	z, err := dnszone.Start("rpcbench.test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Stop() })
	return z
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

func hosts(t *testing.T, r *net.Resolver, name string) ([]string, error) {
	t.Helper()
	addrs, err := r.LookupHost(ctx(t), name)
	slices.Sort(addrs)
	return addrs, err
}

func TestSRVAndHosts(t *testing.T) {
	z := start(t)
	must(t, z.SetSRV("_rpc._tcp.bank.rpcbench.test", dnszone.SRV{Target: "a.rpcbench.test", Port: 7001}, dnszone.SRV{Target: "b.rpcbench.test", Port: 7002}))
	must(t, z.SetHost("a.rpcbench.test", netip.MustParseAddr("127.0.0.1")))
	must(t, z.SetHost("b.rpcbench.test", netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("::1")))
	r := resolver(z)

	_, srvs, err := r.LookupSRV(ctx(t), "", "", "_rpc._tcp.bank.rpcbench.test.")
	if err != nil {
		t.Fatalf("LookupSRV: %v", err)
	}
	var got []string
	for _, s := range srvs {
		got = append(got, net.JoinHostPort(s.Target, itoa(s.Port)))
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"a.rpcbench.test.:7001", "b.rpcbench.test.:7002"}, got); diff != "" {
		t.Errorf("SRV (-want +got):\n%s", diff)
	}
	addrs, err := hosts(t, r, "b.rpcbench.test.")
	if err != nil {
		t.Fatalf("LookupHost: %v", err)
	}
	if diff := cmp.Diff([]string{"127.0.0.2", "::1"}, addrs); diff != "" {
		t.Errorf("A and AAAA (-want +got):\n%s", diff)
	}
}

// TestEmptyAnswerIsNotFound: a name set with no records is an empty,
// authoritative answer, which Go's resolver reports as not found; without
// the AA bit it would call it a lame referral, a server failure.
func TestEmptyAnswerIsNotFound(t *testing.T) {
	z := start(t)
	must(t, z.SetHost("empty.rpcbench.test"))
	must(t, z.SetSRV("_rpc._tcp.empty.rpcbench.test"))
	r := resolver(z)
	_, err := hosts(t, r, "empty.rpcbench.test.")
	var de *net.DNSError
	if !errors.As(err, &de) || !de.IsNotFound {
		t.Errorf("LookupHost of an empty name: got %v, want a not-found DNSError", err)
	}
	_, _, err = r.LookupSRV(ctx(t), "", "", "_rpc._tcp.empty.rpcbench.test.")
	if !errors.As(err, &de) || !de.IsNotFound {
		t.Errorf("LookupSRV of an empty name: got %v, want a not-found DNSError", err)
	}
	_, err = hosts(t, r, "never-set.rpcbench.test.")
	if !errors.As(err, &de) || !de.IsNotFound {
		t.Errorf("LookupHost of a name never set: got %v, want a not-found DNSError", err)
	}
}

// TestChangeStopRestart: a change is served at once; a stopped server is
// an error to its resolver; restarted, it answers on the same address
// with what was set meanwhile.
func TestChangeStopRestart(t *testing.T) {
	z := start(t)
	r := resolver(z)
	must(t, z.SetHost("a.rpcbench.test", netip.MustParseAddr("127.0.0.1")))
	if got, err := hosts(t, r, "a.rpcbench.test."); err != nil || !slices.Equal(got, []string{"127.0.0.1"}) {
		t.Fatalf("before the change: got %v, %v", got, err)
	}
	must(t, z.SetHost("a.rpcbench.test", netip.MustParseAddr("127.0.0.3")))
	if got, err := hosts(t, r, "a.rpcbench.test."); err != nil || !slices.Equal(got, []string{"127.0.0.3"}) {
		t.Fatalf("after the change: got %v, %v", got, err)
	}
	addr := z.Addr()
	must(t, z.Stop())
	if err := z.Stop(); !errors.Is(err, dnszone.ErrStopped) {
		t.Errorf("second Stop: got %v, want ErrStopped", err)
	}
	var de *net.DNSError
	if _, err := hosts(t, r, "a.rpcbench.test."); !errors.As(err, &de) || de.IsNotFound {
		t.Fatalf("while stopped: got %v, want a DNSError other than not found", err)
	}
	must(t, z.SetHost("a.rpcbench.test", netip.MustParseAddr("127.0.0.4")))
	must(t, z.Restart())
	if z.Addr() != addr {
		t.Errorf("restarted on %s, want %s", z.Addr(), addr)
	}
	if got, err := hosts(t, r, "a.rpcbench.test."); err != nil || !slices.Equal(got, []string{"127.0.0.4"}) {
		t.Fatalf("after restart: got %v, %v", got, err)
	}
}

func TestOutsideZoneRefused(t *testing.T) {
	z := start(t)
	if err := z.SetHost("example.com", netip.MustParseAddr("127.0.0.1")); err == nil {
		t.Errorf("SetHost outside the zone: got nil error")
	}
	var de *net.DNSError
	if _, err := hosts(t, resolver(z), "example.com."); !errors.As(err, &de) || de.IsNotFound {
		t.Errorf("lookup outside the zone: got %v, want a DNSError other than not found", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func itoa(p uint16) string { return strconv.Itoa(int(p)) }
