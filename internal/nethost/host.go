package nethost

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Prefix starts the name of every namespace this package makes:
// rpcbench-<pid>-<start>-<n>, where start is the making process's start
// time (field 22 of /proc/PID/stat), so that a later process given the
// same pid is not taken for its maker.
const Prefix = "rpcbench-"

// linkPrefix starts the name of this namespace's end of every veth pair;
// interface names are limited to 15 bytes, too short for Prefix.
const linkPrefix = "rb"

// linkName is the name of this namespace's end of host n's pair, made by
// process pid.
func linkName(pid int, n string) string { return fmt.Sprintf("%s%d-%s", linkPrefix, pid, n) }

// hostLink is the name of the host's end of its pair, inside its
// namespace.
const hostLink = "eth0"

// Host is a test host: a network namespace with one link to this one.
// Its methods are safe for concurrent use.
type Host struct {
	// Name is the namespace's name, for ip netns.
	Name string
	// Addr is the host's address; Local is this namespace's end of the
	// link, the address the host sees connections come from.
	Addr, Local netip.Addr

	prefix netip.Prefix
	link   string // this namespace's end of the pair

	mu     sync.Mutex // guards closed and serializes changes
	closed bool
}

// seq numbers the hosts this process makes.
var seq atomic.Int64

// staleOnce removes other runs' leftovers before this process makes its
// first host.
var staleOnce sync.Once

// New makes a host: a namespace with lo up, and a veth pair to it, both
// ends up, with a /30 of its own. Before the first host of this process it
// removes the hosts of processes that no longer exist (see CleanStale).
// It fails with an error wrapping ErrUnavailable when Available does.
func New() (*Host, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	// A leftover that cannot be removed is no reason to refuse a new
	// host; CI's check for leftovers reports it.
	staleOnce.Do(func() { CleanStale() })
	start, err := procStart(os.Getpid())
	if err != nil {
		return nil, err
	}
	n := seq.Add(1) - 1
	h := &Host{
		Name: fmt.Sprintf("%s%d-%d-%d", Prefix, os.Getpid(), start, n),
		link: linkName(os.Getpid(), strconv.FormatInt(n, 10)),
	}
	unlock, err := lockAlloc()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if h.prefix, err = freeSubnet(); err != nil {
		return nil, err
	}
	h.Local, h.Addr = hostAddrs(h.prefix)
	if err := h.make(true); err != nil {
		return nil, errors.Join(err, h.remove())
	}
	return h, nil
}

// make creates the namespace and the pair, with the host's end up or
// down.
func (h *Host) make(up bool) error {
	bits := strconv.Itoa(h.prefix.Bits())
	steps := [][]string{
		{"netns", "add", h.Name},
		{"link", "add", h.link, "type", "veth", "peer", "name", hostLink, "netns", h.Name},
		{"addr", "add", h.Local.String() + "/" + bits, "dev", h.link},
		{"link", "set", h.link, "up"},
		{"-n", h.Name, "addr", "add", h.Addr.String() + "/" + bits, "dev", hostLink},
		{"-n", h.Name, "link", "set", "lo", "up"},
	}
	if up {
		steps = append(steps, []string{"-n", h.Name, "link", "set", hostLink, "up"})
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return err
		}
	}
	return nil
}

// ErrClosed is returned by the methods of a closed Host.
var ErrClosed = errors.New("nethost: host closed")

// Exec returns the program and arguments that run bin with args inside
// the host: ip netns exec, which switches namespace and then executes bin
// in its own place, so the process started is bin itself, with its pid.
func (h *Host) Exec(bin string, args ...string) (string, []string) {
	return "ip", append([]string{"netns", "exec", h.Name, bin}, args...)
}

// SetLink sets the host's end of its link up or down. Down, the host
// neither sends nor receives: what this namespace sends to it is dropped
// silently, with no error, no FIN and no RST, as with a peer that lost
// power, and what the host sends goes nowhere.
func (h *Host) SetLink(up bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	state := "down"
	if up {
		state = "up"
	}
	return ip("-n", h.Name, "link", "set", hostLink, state)
}

// Restart removes the host, with every socket it held, and makes it again
// with the same names and addresses, as a host that rebooted: a peer's
// next segment to an old connection meets a stack that never heard of it
// and is answered with an RST. The host's link comes back up only if up;
// otherwise the caller sets it up with SetLink. Processes still running
// in the host are killed first.
func (h *Host) Restart(up bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	// Between the removal and the making its /30 is assigned nowhere:
	// another process's New must not take it meanwhile.
	unlock, err := lockAlloc()
	if err != nil {
		return err
	}
	defer unlock()
	if err := h.remove(); err != nil {
		return err
	}
	if err := h.make(up); err != nil {
		if rerr := h.remove(); rerr != nil {
			return errors.Join(err, rerr) // Close will try again
		}
		h.closed = true
		return err
	}
	return nil
}

// Direction says which way a shaped link is limited.
type Direction int

const (
	// ToHost limits what this namespace sends to the host.
	ToHost Direction = iota
	// FromHost limits what the host sends to this namespace.
	FromHost
)

// Shape limits one direction of the link to rateBits bits a second with
// a token bucket (tc tbf) of burstBytes, queueing at most latencyMs
// milliseconds' worth of packets; what does not fit is dropped. A second
// call replaces the first.
func (h *Host) Shape(d Direction, rateBits, burstBytes, latencyMs int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	var args []string
	dev := h.link
	if d == FromHost {
		args, dev = []string{"-n", h.Name}, hostLink
	}
	args = append(args, "qdisc", "replace", "dev", dev, "root", "tbf",
		"rate", strconv.Itoa(rateBits)+"bit", "burst", strconv.Itoa(burstBytes), "latency", strconv.Itoa(latencyMs)+"ms")
	_, err := run("tc", args...)
	return err
}

// Close kills every process still running in the host and removes the
// host and its link. It may be called more than once.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	if err := h.remove(); err != nil {
		return err // a later Close tries again
	}
	h.closed = true
	return nil
}

// remove kills the host's processes and deletes the pair and the
// namespace, whichever of them exist.
func (h *Host) remove() error {
	return removeHost(h.Name, h.link)
}

// removeHost kills the processes in namespace ns and deletes link and
// ns. Deleting one end of a pair deletes both at once, which deleting
// the namespace does only later, when the kernel gets round to it; so the
// link goes first.
func removeHost(ns, link string) error {
	var errs []error
	if out, err := run("ip", "netns", "pids", ns); err == nil {
		for _, f := range strings.Fields(out) {
			if pid, err := strconv.Atoi(f); err == nil {
				// Already gone is fine: it was exiting anyway.
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
					errs = append(errs, fmt.Errorf("nethost: kill %d in %s: %w", pid, ns, err))
				}
			}
		}
	}
	if link != "" && linkExists(link) {
		if err := ip("link", "del", link); err != nil && linkExists(link) {
			errs = append(errs, err)
		}
	}
	if nsExists(ns) {
		if err := ip("netns", "del", ns); err != nil && nsExists(ns) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func linkExists(name string) bool {
	_, err := os.Stat("/sys/class/net/" + name)
	return err == nil
}

func nsExists(name string) bool {
	_, err := os.Stat(netnsDir + "/" + name)
	return err == nil
}

// Sent returns the bytes this namespace's end of the link has put on the
// wire toward the host since it was made: past any Shape queue, so it
// shows how far a transfer has really got.
func (h *Host) Sent() (int64, error) {
	b, err := os.ReadFile("/sys/class/net/" + h.link + "/statistics/tx_bytes")
	if err != nil {
		return 0, fmt.Errorf("nethost: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("nethost: tx_bytes of %s: %w", h.link, err)
	}
	return n, nil
}
