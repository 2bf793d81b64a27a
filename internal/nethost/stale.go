package nethost

import (
	"errors"
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
}

// Leftovers lists the namespaces and links this package made that still
// exist, whoever made them.
func Leftovers() ([]Leftover, error) {
	var out []Leftover
	ents, err := os.ReadDir(netnsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		if pid, ok := ownerPID(e.Name(), Prefix); ok {
			out = append(out, Leftover{Name: e.Name(), PID: pid})
		}
	}
	links, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return nil, err
	}
	for _, e := range links {
		if pid, ok := ownerPID(e.Name(), linkPrefix); ok {
			out = append(out, Leftover{Name: e.Name(), PID: pid, Link: true})
		}
	}
	return out, nil
}

// ownerPID parses "<prefix><pid>-<n>".
func ownerPID(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	p, n, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return 0, false
	}
	if _, err := strconv.Atoi(n); err != nil {
		return 0, false
	}
	return pid, true
}

// alive reports whether a process with this pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// CleanStale removes the hosts and links whose making process no longer
// exists: what a killed run left. It returns what it removed; hosts of
// live processes, this one's included, are left alone.
func CleanStale() ([]Leftover, error) {
	left, err := Leftovers()
	if err != nil {
		return nil, err
	}
	var removed []Leftover
	var errs []error
	for _, l := range left {
		if alive(l.PID) {
			continue
		}
		var err error
		if l.Link {
			// Its namespace, removed just above, may have taken it.
			if err = ip("link", "del", l.Name); err != nil && !linkExists(l.Name) {
				err = nil
			}
		} else {
			err = removeHost(l.Name, linkPrefix+strings.TrimPrefix(l.Name, Prefix))
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, l)
	}
	return removed, errors.Join(errs...)
}
