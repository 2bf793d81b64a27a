package leftover

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Prefix starts every name that carries an owner.
const Prefix = "rpcbench"

// Owner is one process for good: a pid alone may be reused.
type Owner struct {
	// Space tags the boot and the pid namespace PID is in: 8 hex digits.
	Space string
	PID   int
	// Start is the process's start time, in clock ticks since boot
	// (field 22 of /proc/PID/stat).
	Start uint64
}

// self is this process, read once.
var self = sync.OnceValues(func() (Owner, error) {
	st, err := stat(os.Getpid())
	if err != nil {
		return Owner{}, err
	}
	return Owner{Space: space(), PID: os.Getpid(), Start: st.start}, nil
})

// Self returns this process.
func Self() (Owner, error) { return self() }

// Name returns the start of a name this owner's things have:
// "rpcbench<sep><space><sep><pid><sep><start><sep>".
func (o Owner) Name(sep string) string {
	return strings.Join([]string{Prefix, o.Space, strconv.Itoa(o.PID), strconv.FormatUint(o.Start, 10), ""}, sep)
}

// Parse returns the owner a name made with Owner.Name(sep) carries, and
// false for any other name.
func Parse(name, sep string) (Owner, bool) {
	f := strings.SplitN(name, sep, 5)
	if len(f) != 5 || f[0] != Prefix || len(f[1]) != 8 {
		return Owner{}, false
	}
	if _, err := hex.DecodeString(f[1]); err != nil || strings.ToLower(f[1]) != f[1] {
		return Owner{}, false
	}
	pid, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[3], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return Owner{}, false
	}
	return Owner{Space: f[1], PID: pid, Start: start}, true
}

// Gone reports whether o has ended, as far as this process can tell: o
// is in this process's boot and pid namespace, and no process with its
// pid and start time runs there, or only its zombie. An owner in another
// space is never gone: its process table is not this one's to read; nor
// is one missing from a /proc that hides other users' processes, unless
// this process is root.
func (o Owner) Gone() bool {
	me, err := Self()
	if err != nil || o.Space != me.Space {
		return false
	}
	st, err := stat(o.PID)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// Unless /proc hides other users' processes from this one.
		return os.Geteuid() == 0 || !hidepid()
	case err != nil:
		return false // unreadable is not ended
	}
	return st.start != o.Start || st.state == 'Z'
}

// procStat is what this package reads of /proc/PID/stat.
type procStat struct {
	state byte
	start uint64
}

// stat reads process pid's state and start time. Its error wraps
// os.ErrNotExist when there is no such process.
func stat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, fmt.Errorf("leftover: %w", err)
	}
	// The command name, field 2, is in parentheses and may hold spaces
	// and parentheses: count from the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("leftover: /proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("leftover: /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("leftover: /proc/%d/stat start time: %w", pid, err)
	}
	return procStat{state: f[0][0], start: start}, nil
}

// space returns the tag of this boot and pid namespace: the same for
// every process that sees the same process table, and another after a
// reboot or in another container. Where either is unreadable it is the
// tag of what is readable, which at worst takes a process in another
// namespace for one of this, as a bare pid would.
func space() string {
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, _ := os.Readlink("/proc/self/ns/pid")
	sum := sha256.Sum256([]byte(strings.TrimSpace(string(boot)) + "\n" + ns))
	return hex.EncodeToString(sum[:4])
}

// hidepid reports whether /proc is mounted with hidepid (proc(5)), under
// which a process of another user is missing from it, as if it had
// ended.
var hidepid = sync.OnceValue(func() bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	return err != nil || hidesPIDs(string(b))
})

// hidesPIDs reports whether mountinfo, as /proc/self/mountinfo reads,
// mounts /proc with a hidepid other than 0.
func hidesPIDs(mountinfo string) bool {
	for line := range strings.SplitSeq(mountinfo, "\n") {
		// "22 27 0:21 / /proc rw,relatime - proc proc rw,hidepid=2": the
		// mount point is field 5; the super block's options are the
		// third field after the " - ".
		f := strings.Fields(line)
		_, after, ok := strings.Cut(line, " - ")
		super := strings.Fields(after)
		if !ok || len(f) < 5 || f[4] != "/proc" || len(super) < 3 {
			continue
		}
		for opt := range strings.SplitSeq(super[2], ",") {
			if v, ok := strings.CutPrefix(opt, "hidepid="); ok && v != "0" && v != "off" {
				return true
			}
		}
	}
	return false
}
