package nethost

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Leftover is a namespace or link this package made, by its name.
type Leftover struct {
	Name string
	// PID is the process that made it.
	PID int
	// Link is true for this namespace's end of a pair, false for a
	// namespace.
	Link bool

	start uint64 // the maker's start time; namespaces only
	n     string // the host's number within its maker
}

// Leftovers lists the namespaces and links this package made that still
// exist, whoever made them.
func Leftovers() ([]Leftover, error) {
	var out []Leftover
	ents, err := os.ReadDir(netnsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("nethost: %w", err)
	}
	for _, e := range ents {
		if l, ok := parseNamespace(e.Name()); ok {
			out = append(out, l)
		}
	}
	links, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return nil, fmt.Errorf("nethost: %w", err)
	}
	for _, e := range links {
		if l, ok := parseLink(e.Name()); ok {
			out = append(out, l)
		}
	}
	return out, nil
}

// parseNamespace parses "rpcbench-<pid>-<start>-<n>".
func parseNamespace(name string) (Leftover, bool) {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return Leftover{}, false
	}
	f := strings.Split(rest, "-")
	if len(f) != 3 {
		return Leftover{}, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	_, err3 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || err3 != nil || pid <= 0 {
		return Leftover{}, false
	}
	return Leftover{Name: name, PID: pid, start: start, n: f[2]}, true
}

// parseLink parses "rb<pid>-<n>".
func parseLink(name string) (Leftover, bool) {
	rest, ok := strings.CutPrefix(name, linkPrefix)
	if !ok {
		return Leftover{}, false
	}
	p, n, ok := strings.Cut(rest, "-")
	if !ok {
		return Leftover{}, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return Leftover{}, false
	}
	if _, err := strconv.Atoi(n); err != nil {
		return Leftover{}, false
	}
	return Leftover{Name: name, PID: pid, Link: true, n: n}, true
}

// procStart returns the start time of process pid, in clock ticks since
// boot (field 22 of /proc/PID/stat): with the pid, it names one process
// for good, where a pid alone may be reused.
func procStart(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("nethost: %w", err)
	}
	// The command name, field 2, is in parentheses and may hold spaces
	// and parentheses: count from the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("nethost: /proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("nethost: /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("nethost: /proc/%d/stat start time: %w", pid, err)
	}
	return start, nil
}

// makerAlive reports whether the process that made namespace l is still
// running: a process with its pid and its start time.
func makerAlive(l Leftover) bool {
	start, err := procStart(l.PID)
	return err == nil && start == l.start
}

// alive reports whether a process with this pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// CleanStale removes the hosts whose making process no longer exists,
// what a killed run left, and the links of processes that no longer
// exist. It returns what it removed; hosts of live processes, this one's
// included, are left alone. A namespace names its maker by pid and start
// time, so a later process given the same pid does not keep it alive. A
// link names only the pid; it normally goes with its namespace, and one
// left behind stays while its pid is in use.
func CleanStale() ([]Leftover, error) {
	// Under the allocation lock, so that a test can hold it to keep
	// other processes from cleaning what it examines.
	unlock, err := lockAlloc()
	if err != nil {
		return nil, err
	}
	defer unlock()
	return cleanStale()
}

// cleanStale is CleanStale without the lock.
func cleanStale() ([]Leftover, error) {
	left, err := Leftovers()
	if err != nil {
		return nil, err
	}
	var removed []Leftover
	var errs []error
	for _, l := range left {
		var err error
		switch {
		case l.Link && alive(l.PID), !l.Link && makerAlive(l):
			continue
		case l.Link:
			// Its namespace, removed just above, may have taken it.
			if err = ip("link", "del", l.Name); err != nil && !linkExists(l.Name) {
				err = nil
			}
		default:
			err = removeHost(l.Name, linkName(l.PID, l.n))
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, l)
	}
	return removed, errors.Join(errs...)
}
