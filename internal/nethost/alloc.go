package nethost

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// block is the range the /30s come from: 198.18.0.0/15, set aside for
// benchmark tests (RFC 2544), so it clashes with no real network.
var block = netip.MustParsePrefix("198.18.0.0/15")

// netnsDir is where ip keeps its named namespaces.
const netnsDir = "/run/netns"

// lockPath is the lock every process of this package holds while it
// chooses a /30 and assigns it, so that no two take the same one. It is
// not netnsDir itself: ip netns add locks that.
const lockPath = "/run/lock/rpcbench-nethost.lock"

// lockWait bounds how long lockAlloc waits for another process: the lock
// is held for a few ip commands, so a minute means its holder is stuck
// (stopped, or its ip hung).
const lockWait = time.Minute

// lockAlloc takes the allocation lock and returns its release.
func lockAlloc() (func(), error) {
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o755); err != nil {
		return nil, fmt.Errorf("nethost: %w", err)
	}
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("nethost: %w", err)
	}
	// flock has no timeout: it blocks in a goroutine of its own, which,
	// if the wait is given up, lets go of the lock as soon as it gets it.
	got := make(chan error, 1)
	go func() { got <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	t := time.NewTimer(lockWait)
	defer t.Stop()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("nethost: lock %s: %w", lockPath, err)
		}
		return func() { f.Close() }, nil // closing drops the lock
	case <-t.C:
		go func() {
			<-got
			f.Close()
		}()
		return nil, fmt.Errorf("nethost: lock %s: held by another process for %v", lockPath, lockWait)
	}
}

// freeSubnet returns the first /30 of block none of whose addresses is
// assigned in this namespace. Call it holding lockAlloc.
func freeSubnet() (netip.Prefix, error) {
	out, err := run("ip", "-o", "-4", "addr", "show")
	if err != nil {
		return netip.Prefix{}, err
	}
	used := map[netip.Prefix]bool{}
	for _, line := range strings.Split(out, "\n") {
		// "3: rb12-0    inet 198.18.0.1/30 scope global rb12-0\..."
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] != "inet" {
				continue
			}
			if p, err := netip.ParsePrefix(f[i+1]); err == nil && block.Contains(p.Addr()) {
				q, _ := p.Addr().Prefix(30)
				used[q] = true
			}
		}
	}
	for a := block.Addr(); block.Contains(a); {
		p := netip.PrefixFrom(a, 30)
		if !used[p] {
			return p, nil
		}
		for range 4 {
			a = a.Next()
		}
	}
	return netip.Prefix{}, fmt.Errorf("nethost: every /30 of %v is in use", block)
}

// hostAddrs returns the two usable addresses of a /30: this namespace's
// end (.1) and the host's (.2).
func hostAddrs(p netip.Prefix) (local, host netip.Addr) {
	local = p.Addr().Next()
	return local, local.Next()
}
