package nethost

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// ConnState is a TCP connection's state, as the kernel numbers it
// (include/net/tcp_states.h).
type ConnState int

// The states a connection to a host can be seen in.
const (
	Established ConnState = 1 + iota
	SynSent
	SynRecv
	FinWait1
	FinWait2
	TimeWait
	Close
	CloseWait
	LastAck
	Listen
	Closing
)

var stateNames = [...]string{
	Established: "ESTABLISHED", SynSent: "SYN_SENT", SynRecv: "SYN_RECV", FinWait1: "FIN_WAIT1", FinWait2: "FIN_WAIT2",
	TimeWait: "TIME_WAIT", Close: "CLOSE", CloseWait: "CLOSE_WAIT", LastAck: "LAST_ACK", Listen: "LISTEN", Closing: "CLOSING",
}

func (s ConnState) String() string {
	if s > 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "UNKNOWN_STATE_" + strconv.Itoa(int(s))
}

// Conn is one TCP connection of this namespace, by the kernel's table.
type Conn struct {
	Local, Remote netip.AddrPort
	State         ConnState
	// Unacked counts the bytes this side sent that the peer has not
	// acknowledged (the table's tx_queue).
	Unacked int
}

// Conns returns the TCP connections this namespace holds to the host's
// address at port, whichever process holds them, as the kernel's own
// table (/proc/net/tcp and /proc/net/tcp6) lists them: what a process
// did with its sockets, seen from outside it. A connection the kernel has
// given up on, or that has fully ended, is not listed. An IPv6 socket
// connected to the host's IPv4 address is listed with its IPv4 form.
func (h *Host) Conns(port uint16) ([]Conn, error) {
	remote := netip.AddrPortFrom(h.Addr, port)
	var out []Conn
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("nethost: %w", err)
		}
		cs, err := parseConns(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("nethost: %s: %w", name, err)
		}
		for _, c := range cs {
			if c.Remote == remote {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// parseConns reads a /proc/net/tcp or tcp6 table: a heading line, then
// one line per socket whose second to fifth fields are the local and
// remote addresses, the state and tx_queue:rx_queue, in hex.
func parseConns(r io.Reader) ([]Conn, error) {
	sc := bufio.NewScanner(r)
	var out []Conn
	for n := 0; sc.Scan(); n++ {
		if n == 0 {
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			return nil, fmt.Errorf("line %d: %d fields, want at least 5", n+1, len(f))
		}
		local, err := parseAddrPort(f[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: local address: %w", n+1, err)
		}
		remote, err := parseAddrPort(f[2])
		if err != nil {
			return nil, fmt.Errorf("line %d: remote address: %w", n+1, err)
		}
		st, err := strconv.ParseUint(f[3], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("line %d: state %q: %w", n+1, f[3], err)
		}
		txq, _, _ := strings.Cut(f[4], ":")
		unacked, err := strconv.ParseUint(txq, 16, 32)
		if err != nil {
			return nil, fmt.Errorf("line %d: tx_queue %q: %w", n+1, f[4], err)
		}
		out = append(out, Conn{Local: local, Remote: remote, State: ConnState(st), Unacked: int(unacked)})
	}
	return out, sc.Err()
}

// parseAddrPort parses the table's ADDR:PORT. Its address is 4 or 16
// bytes printed as 32-bit words, each the hex of the word's value as this
// machine stores it; its port is plain hex; an IPv4-mapped IPv6 address is returned as IPv4.
func parseAddrPort(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("%q: no port", s)
	}
	raw, err := hex.DecodeString(a)
	if err != nil || len(raw) != 4 && len(raw) != 16 {
		return netip.AddrPort{}, fmt.Errorf("%q: not 4 or 16 bytes of hex", s)
	}
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(raw[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(raw)
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: port: %w", s, err)
	}
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}
