package scenario

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procStatusKB returns one "Name:   N kB" entry of /proc/<pid>/status,
// such as VmRSS (resident memory now) or VmHWM (its peak so far).
func procStatusKB(pid int, name string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), name+":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/status %s: %w", pid, name, err)
		}
		return n, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, name)
}
