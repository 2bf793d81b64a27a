package nethost

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/proc"
)

// startEcho runs the echo helper inside h, listening on addr, and returns
// the address it bound; the helper is killed when the test ends.
func startEcho(t *testing.T, h *Host, addr string) string {
	t.Helper()
	bin, args := h.Exec(os.Args[0], "-test.run=^$")
	// Killed when the test's context ends, before its cleanups run.
	p, err := proc.Start(t.Context(), proc.Spec{
		Bin: bin, Args: args, Env: append(os.Environ(), helperEnv+"=echo", helperAddrEnv+"="+addr),
		StdoutPipe: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Err(); p.Stdout.Close() })
	line, err := bufio.NewReader(p.Stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("echo helper: %v", err)
	}
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "ERROR") {
		t.Fatalf("echo helper: %s", line)
	}
	return line
}

// dialEcho connects to the echo helper at addr, makes one round trip, and
// closes the connection when the test ends.
func dialEcho(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := roundTrip(c, "before", answerWait); err != nil {
		t.Fatal(err)
	}
	return c
}

// roundTrip writes a line on c and reads it back within wait.
func roundTrip(c net.Conn, msg string, wait time.Duration) error {
	c.SetDeadline(time.Now().Add(wait))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		return err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if got != msg+"\n" {
		return errors.New("echo: got " + got)
	}
	return nil
}

func TestHostAddressesAndReach(t *testing.T) {
	needHosts(t)
	h := newHost(t)
	if !block.Contains(h.Addr) || !block.Contains(h.Local) {
		t.Fatalf("addresses %v, %v outside %v", h.Local, h.Addr, block)
	}
	if p, _ := h.Addr.Prefix(30); p != netip.PrefixFrom(h.Local, 30).Masked() {
		t.Fatalf("host %v and local %v are not in one /30", h.Addr, h.Local)
	}
	if !nsExists(h.Name) || !linkExists(h.link) {
		t.Fatalf("namespace %s or link %s missing", h.Name, h.link)
	}
	addr := startEcho(t, h, h.Addr.String()+":0")
	base, err := h.Sent()
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := strings.Repeat("x", 5000)
	if err := roundTrip(c, msg, answerWait); err != nil {
		t.Fatalf("echo through the link: %v", err)
	}
	if n, err := h.Sent(); err != nil || n-base < int64(len(msg)) {
		t.Fatalf("Sent grew by %d (%v), want at least the %d bytes written", n-base, err, len(msg))
	}
	if got := c.LocalAddr().(*net.TCPAddr).AddrPort().Addr(); got != h.Local {
		t.Fatalf("connection comes from %v, want %v", got, h.Local)
	}
}

// A link set down inside the host drops traffic silently: a read waits
// out its deadline rather than failing, and the same connection works
// again once the link is back up.
func TestLinkDownIsSilent(t *testing.T) {
	needHosts(t)
	h := newHost(t)
	addr := startEcho(t, h, h.Addr.String()+":0")
	c := dialEcho(t, addr)
	if err := h.SetLink(false); err != nil {
		t.Fatal(err)
	}
	err := roundTrip(c, "during", 300*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("round trip over a down link: got %v, want a timeout (no FIN, no RST)", err)
	}
	if err := h.SetLink(true); err != nil {
		t.Fatal(err)
	}
	// The echo of "during" was queued behind the link; it arrives first.
	c.SetReadDeadline(time.Now().Add(answerWait))
	r := bufio.NewReader(c)
	if got, err := r.ReadString('\n'); err != nil || got != "during\n" {
		t.Fatalf("after the link came back: got %q, %v; want the queued echo", got, err)
	}
}

// A restarted host has forgotten every connection: the old connection's
// next segment is answered with an RST.
func TestRestartResets(t *testing.T) {
	needHosts(t)
	h := newHost(t)
	addr := startEcho(t, h, h.Addr.String()+":0")
	c := dialEcho(t, addr)
	if err := h.SetLink(false); err != nil {
		t.Fatal(err)
	}
	if err := h.Restart(false); err != nil {
		t.Fatal(err)
	}
	// The old helper died with the namespace; a new one takes its port.
	if got := startEcho(t, h, addr); got != addr {
		t.Fatalf("restarted echo on %s, want %s", got, addr)
	}
	if err := h.SetLink(true); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(c, "after", answerWait); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("old connection after restart: got %v, want ECONNRESET", err)
	}
	dialEcho(t, addr) // a new connection is served
}

func TestShapeInstallsTBF(t *testing.T) {
	needHosts(t)
	h := newHost(t)
	for _, d := range []Direction{ToHost, FromHost} {
		if err := h.Shape(d, 1_000_000, 16384, 20); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"qdisc", "show", "dev", h.link}, {"-n", h.Name, "qdisc", "show", "dev", hostLink}} {
		out, err := run("tc", args...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "tbf") || !strings.Contains(out, "rate 1Mbit") {
			t.Errorf("tc %s: got %q, want a 1Mbit tbf", strings.Join(args, " "), out)
		}
	}
}

func TestConcurrentHostsGetDistinctSubnets(t *testing.T) {
	needHosts(t)
	const n = 4
	hosts := make([]*Host, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { hosts[i], errs[i] = New() })
	}
	wg.Wait()
	seen := map[netip.Addr]bool{}
	for i, h := range hosts {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		t.Cleanup(func() { h.Close() })
		if seen[h.Addr] {
			t.Errorf("two hosts have address %v", h.Addr)
		}
		seen[h.Addr] = true
	}
}

// Close removes the namespace and both ends of the link, and kills what
// ran inside.
func TestCloseLeavesNothing(t *testing.T) {
	needHosts(t)
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	startEcho(t, h, h.Addr.String()+":0")
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	left, err := Leftovers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range left {
		if l.Name == h.Name || l.Name == h.link {
			t.Errorf("left behind: %+v", l)
		}
	}
	if err := h.SetLink(true); !errors.Is(err, ErrClosed) {
		t.Errorf("SetLink after Close: got %v, want ErrClosed", err)
	}
}

// A process killed with SIGKILL cannot clean up; the next New, by way of
// CleanStale, removes what it left, and nothing of a live process.
func TestStaleHostsOfKilledProcessRemoved(t *testing.T) {
	needHosts(t)
	mine := newHost(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=make")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.HasPrefix(line, "ERROR") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper: %q, %v", line, err)
	}
	name := strings.TrimSpace(line)
	// Held from the kill to the check, so that no other process's first
	// New cleans what this test examines.
	unlock, err := lockAlloc()
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	cmd.Process.Kill()
	cmd.Wait()

	left, err := Leftovers()
	if err != nil {
		t.Fatal(err)
	}
	var theirs []string
	for _, l := range left {
		if l.PID == cmd.Process.Pid {
			theirs = append(theirs, l.Name)
		}
	}
	slices.Sort(theirs)
	ns, _ := parseNamespace(name)
	link := linkName(ns.PID, ns.n)
	if want := []string{link, name}; !slices.Equal(theirs, want) {
		t.Fatalf("after SIGKILL: got leftovers %v, want %v (the check below would prove nothing)", theirs, want)
	}
	removed, err := cleanStale()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range removed {
		if l.PID == cmd.Process.Pid {
			got = append(got, l.Name)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, theirs) {
		t.Errorf("CleanStale removed %v, want %v", got, theirs)
	}
	if nsExists(name) || linkExists(link) {
		t.Errorf("%s or %s still exists", name, link)
	}
	if !nsExists(mine.Name) || !linkExists(mine.link) {
		t.Errorf("CleanStale removed the live process's host %s", mine.Name)
	}
}

func TestUnavailableWithoutIproute(t *testing.T) {
	if os.Geteuid() != 0 {
		if err := Available(); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "root") {
			t.Fatalf("not root: got %v, want ErrUnavailable naming root", err)
		}
		return
	}
	t.Setenv("PATH", t.TempDir())
	err := Available()
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "iproute2") {
		t.Fatalf("without ip in PATH: got %v, want ErrUnavailable naming iproute2", err)
	}
}

func TestParseNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		link bool
		pid  int
		ok   bool
	}{
		{"rpcbench-123-456-0", false, 123, true},
		{"rb123-4", true, 123, true},
		{"rpcbench-123-0", false, 0, false}, // no start time
		{"rpcbench-x-1-0", false, 0, false},
		{"rpcbench-123-456-a", false, 0, false},
		{"rpcbench-123-456-0-9", false, 0, false},
		{"rbx", true, 0, false},
		{"rb12", true, 0, false},
		{"eth0", true, 0, false},
	} {
		parse := parseNamespace
		if tc.link {
			parse = parseLink
		}
		l, ok := parse(tc.name)
		if l.PID != tc.pid || ok != tc.ok || (ok && l.Link != tc.link) {
			t.Errorf("parse(%q): got %+v, %v; want pid %d, %v", tc.name, l, ok, tc.pid, tc.ok)
		}
	}
}

// A namespace whose pid is now another process's is stale: its maker's
// start time does not match.
func TestReusedPIDIsNotTheMaker(t *testing.T) {
	me, err := procStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	l, ok := parseNamespace(fmt.Sprintf("%s%d-%d-0", Prefix, os.Getpid(), me))
	if !ok || !makerAlive(l) {
		t.Fatalf("this process's own namespace name %+v: maker not alive", l)
	}
	l.start = me + 1
	if makerAlive(l) {
		t.Fatalf("a namespace with another start time is taken for this process's")
	}
}

// A host that restarts frees its /30 for a moment; a host made meanwhile
// must not get it, or two links would carry the same address.
func TestRestartKeepsItsSubnet(t *testing.T) {
	needHosts(t)
	h := newHost(t)
	stop := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		defer close(errc)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := h.Restart(true); err != nil {
				errc <- err
				return
			}
		}
	}()
	for i := range 20 {
		g, err := New()
		if err != nil {
			close(stop)
			t.Fatal(err)
		}
		same := g.Addr == h.Addr
		if err := g.Close(); err != nil {
			t.Error(err)
		}
		if same {
			t.Errorf("host %d got %v, the address of a host that was restarting", i, g.Addr)
		}
	}
	close(stop)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestParseConns(t *testing.T) {
	// A heading, an IPv4 socket and an IPv6 one connected to an IPv4
	// address, as a little-endian machine prints them.
	table := "  sl  local_address rem_address   st tx_queue rx_queue\n" +
		"   0: 0100007F:1F90 0200000A:0050 01 00000000:00000000 00:00000000 00000000\n" +
		"   1: 0000000000000000FFFF00000100007F:A000 0000000000000000FFFF00000200000A:0050 04 0000001A:00000000\n"
	got, err := parseConns(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	want := []Conn{
		{netip.MustParseAddrPort("127.0.0.1:8080"), netip.MustParseAddrPort("10.0.0.2:80"), Established, 0},
		{netip.MustParseAddrPort("127.0.0.1:40960"), netip.MustParseAddrPort("10.0.0.2:80"), FinWait1, 26},
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the sample table is a little-endian machine's")
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, bad := range []string{"h\n 0: 0100007F 0200000A:0050 01 0:0\n", "h\n 0: 01007F:1F90 0200000A:0050 01 0:0\n", "h\n 0: 0100007F:1F90 0200000A:0050 zz 0:0\n", "h\n 0: 0100007F:1F90 0200000A:0050 01\n", "h\n 0: 0100007F:1F90 0200000A:0050 01 xy:0\n"} {
		if _, err := parseConns(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed, want an error", bad)
		}
	}
	if s := ConnState(99).String(); s != "UNKNOWN_STATE_99" {
		t.Errorf("ConnState(99) = %s", s)
	}
}

// Conns sees a connection to the host, established while it is open, and
// no longer so once this side closed it.
func TestConnsFollowsAConnection(t *testing.T) {
	needHosts(t)
	h := newHost(t)
	addr := startEcho(t, h, h.Addr.String()+":0")
	port := netip.MustParseAddrPort(addr).Port()
	c := dialEcho(t, addr)
	local := c.LocalAddr().(*net.TCPAddr).AddrPort()
	cs, err := h.Conns(port)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Conn{{local, netip.AddrPortFrom(h.Addr, port), Established, 0}}; !slices.Equal(cs, want) {
		t.Fatalf("Conns = %v, want %v", cs, want)
	}
	c.Close()
	cs, err = h.Conns(port)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range cs {
		if x.Local == local && x.State == Established {
			t.Fatalf("closed connection still %v", x.State)
		}
	}
}
