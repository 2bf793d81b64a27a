package load

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// userHZ is the unit of utime and stime in /proc/PID/stat. The kernel
// reports them in USER_HZ ticks, which is 100 on every Linux architecture
// Go supports (sysconf(_SC_CLK_TCK) would say so, but needs cgo); server
// CPU is therefore known to 10ms.
const userHZ = 100

// selfCPU returns the user plus system CPU time this process has used.
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("load: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// procCPU returns the user plus system CPU time process pid has used,
// from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("load: %w", err)
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime, fields 14 and 15 of /proc/PID/stat.
// The command name (field 2) is in parentheses and may hold spaces, so
// fields are counted from the last ')'.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("load: /proc stat without a command name: %.60q", b)
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return 0, fmt.Errorf("load: /proc stat has %d fields after the name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("load: /proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// procRSS returns the resident set size of process pid, VmRSS in
// /proc/PID/status, in KiB.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("load: %w", err)
	}
	return parseStatusRSS(b)
}

// parseStatusRSS reads the line "VmRSS:    1234 kB" of /proc/PID/status.
func parseStatusRSS(b []byte) (int64, error) {
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("load: /proc status: VmRSS line %q, want a number of kB", bytes.TrimSpace(line))
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("load: /proc status: %w", err)
		}
		return n, nil
	}
	return 0, errors.New("load: /proc status has no VmRSS line")
}

// procMaxFiles returns the soft limit on open files of process pid, from
// /proc/PID/limits; -1 means unlimited.
func procMaxFiles(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		return 0, fmt.Errorf("load: %w", err)
	}
	return parseLimitsNoFile(b)
}

// parseLimitsNoFile reads the soft limit of the line "Max open files"
// of /proc/PID/limits.
func parseLimitsNoFile(b []byte) (int64, error) {
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte("Max open files"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) < 2 {
			return 0, fmt.Errorf("load: /proc limits: line %q, want soft and hard limits", bytes.TrimSpace(line))
		}
		if string(f[0]) == "unlimited" {
			return -1, nil
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("load: /proc limits: %w", err)
		}
		return n, nil
	}
	return 0, errors.New("load: /proc limits has no Max open files line")
}

// openFiles returns how many file descriptors this process has open.
func openFiles() (int, error) {
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, fmt.Errorf("load: %w", err)
	}
	return len(des), nil
}

// raiseNoFile raises this process's soft RLIMIT_NOFILE to at least want
// if the hard limit allows (Go has already raised it to the hard limit
// at start), and returns the soft limit in force.
func raiseNoFile(want uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("load: getrlimit: %w", err)
	}
	if lim.Cur >= want {
		return lim.Cur, nil
	}
	lim.Cur = min(want, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("load: setrlimit: %w", err)
	}
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("load: getrlimit: %w", err)
	}
	return lim.Cur, nil
}
