package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// MaxLogBytes bounds each file of an evidence directory's logs/: a log
// that grew past it (a flood of connections, a scenario that retries for
// seconds) keeps its first and last lines, MaxLogBytes/2 bytes of each,
// and in their place a line that says what was left out (CutLog). 118,000
// lines of a flood say no more than their counts do, and the evidence is
// kept in git, within its budget (10 MiB for the whole of evidence/).
const MaxLogBytes = 32 << 10

// CutLog bounds the log at path to about limit bytes: when it is larger,
// it keeps the whole lines that fit in the first and in the last limit/2
// bytes and puts between them one line, starting serverapi.CutPrefix,
// that counts the lines and bytes left out and, for an event log, each
// event they held, most frequent first:
//
//	#cut 118042 lines (16021311 bytes) left out by rpcbench's evidence writer: EXEC=100000 CONN_OPEN=9021 CONN_CLOSED=9021
//
// A log an earlier run cut already (a case a re-run kept) is cut again
// only when it is still over limit (cut under a larger one): its cut
// line is then among what is left out, and the new one counts what both
// left out. The file is replaced by one rename, so that a reader never
// sees half of it. It reports whether it cut anything.
func CutLog(path string, limit int64) (bool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return false, fmt.Errorf("report: cut log: %w", err)
	}
	if fi.Size() <= limit {
		return false, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("report: cut log: %w", err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	// An earlier cut line stays out of the kept head and tail: it is
	// counted into the new one.
	earlier := slices.IndexFunc(lines, func(l []byte) bool { return bytes.HasPrefix(l, []byte(serverapi.CutPrefix)) })
	head, used := 0, int64(0)
	for head < len(lines) && head != earlier && used+int64(len(lines[head])) <= limit/2 {
		used += int64(len(lines[head]))
		head++
	}
	tail, used := len(lines), 0
	for tail > head && tail-1 != earlier && used+int64(len(lines[tail-1])) <= limit/2 {
		used += int64(len(lines[tail-1]))
		tail--
	}
	if tail <= head {
		return false, nil
	}
	var out bytes.Buffer
	for _, l := range lines[:head] {
		out.Write(l)
	}
	out.WriteString(cutLine(lines[head:tail]))
	for _, l := range lines[tail:] {
		out.Write(l)
	}
	if bytes.Equal(out.Bytes(), b) {
		// Cut already under this limit: its cut line alone is over.
		return false, nil
	}
	tmp := path + ".cut"
	if err := os.WriteFile(tmp, out.Bytes(), fi.Mode().Perm()); err != nil {
		return false, fmt.Errorf("report: cut log: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return false, fmt.Errorf("report: cut log: %w", err)
	}
	return true, nil
}

// cutLine is the line that stands for the lines left out. An earlier
// cut line among them adds what it counted.
func cutLine(left [][]byte) string {
	var lines, size int
	counts := map[string]int{}
	for _, l := range left {
		if n, sz, evs, ok := parseCutLine(l); ok {
			lines, size = lines+n, size+sz
			for k, v := range evs {
				counts[k] += v
			}
			continue
		}
		lines++
		size += len(l)
		var ev struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal(l, &ev) == nil && ev.Msg != "" {
			counts[ev.Msg]++
		}
	}
	names := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(counts[b]-counts[a], strings.Compare(a, b))
	})
	var b strings.Builder
	noun := "lines"
	if lines == 1 {
		noun = "line"
	}
	fmt.Fprintf(&b, "%s%d %s (%d bytes) left out by rpcbench's evidence writer", serverapi.CutPrefix, lines, noun, size)
	for i, n := range names {
		if i == 0 {
			b.WriteString(":")
		}
		fmt.Fprintf(&b, " %s=%d", n, counts[n])
	}
	b.WriteString("\n")
	return b.String()
}

// parseCutLine reads a line cutLine wrote: the lines and bytes it stands
// for and the events it counted.
func parseCutLine(l []byte) (lines, size int, events map[string]int, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSuffix(string(l), "\n"), serverapi.CutPrefix)
	if !found {
		return 0, 0, nil, false
	}
	head, evs, _ := strings.Cut(rest, ": ")
	var noun string
	if _, err := fmt.Sscanf(head, "%d %s (%d bytes)", &lines, &noun, &size); err != nil {
		return 0, 0, nil, false
	}
	events = map[string]int{}
	for _, kv := range strings.Fields(evs) {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, 0, nil, false
		}
		events[k] += n
	}
	return lines, size, events, true
}

// cutLogs applies CutLog, with MaxLogBytes, to every file in dir.
func cutLogs(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("report: cut logs: %w", err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if _, err := CutLog(filepath.Join(dir, e.Name()), MaxLogBytes); err != nil {
			return err
		}
	}
	return nil
}
