package report

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Tally counts the lines that passed, failed and were interrupted.
func Tally(lines []Line) (passed, failed, interrupted int) {
	t := tallyOf(lines)
	return t.passed, t.failed, t.interrupted
}

// Summary returns the line that ends an output.txt: exactly
// "N passed, M failed", then ", K interrupted" when K > 0. A line of
// another verdict (none is written) counts as failed.
func Summary(lines []Line) string { return tallyOf(lines).String() }

// tally is what a summary line says.
type tally struct{ passed, failed, interrupted int }

func tallyOf(lines []Line) tally {
	var t tally
	for _, l := range lines {
		switch l.Verdict {
		case Pass:
			t.passed++
		case Interrupted:
			t.interrupted++
		default:
			t.failed++
		}
	}
	return t
}

func (t tally) String() string {
	s := fmt.Sprintf("%d passed, %d failed", t.passed, t.failed)
	if t.interrupted > 0 {
		s += fmt.Sprintf(", %d interrupted", t.interrupted)
	}
	return s
}

var summaryLine = regexp.MustCompile(`^(\d+) passed, (\d+) failed(?:, (\d+) interrupted)?$`)

// parseSummary reads a line Summary wrote, and also accepts
// ", 0 interrupted". A count too large for an int reads as -1, which no
// tally equals.
func parseSummary(s string) (tally, bool) {
	m := summaryLine.FindStringSubmatch(s)
	if m == nil {
		return tally{}, false
	}
	n := func(s string) int {
		if s == "" {
			return 0
		}
		v, err := strconv.Atoi(s)
		if err != nil {
			return -1
		}
		return v
	}
	return tally{passed: n(m[1]), failed: n(m[2]), interrupted: n(m[3])}, true
}

// CaseCount is how one case fared in a run that may hold it several times
// (rpcbench --count).
type CaseCount struct {
	Name string
	// Runs is how many lines the case has, Passed how many of them passed.
	Runs, Passed int
	// FailedRuns lists the 1-based occurrences that failed: 3 means the
	// case's third line. It is empty, never nil, when none failed.
	FailedRuns []int
	// InterruptedRuns lists the 1-based occurrences that were interrupted;
	// empty, never nil, when none was.
	InterruptedRuns []int
}

// CountByCase returns one CaseCount per case name, in the order the names
// first appear in lines.
func CountByCase(lines []Line) []CaseCount {
	out := []CaseCount{}
	at := map[string]int{} // name → index in out
	for _, l := range lines {
		i, ok := at[l.Name]
		if !ok {
			i = len(out)
			at[l.Name] = i
			out = append(out, CaseCount{Name: l.Name, FailedRuns: []int{}, InterruptedRuns: []int{}})
		}
		c := &out[i]
		c.Runs++
		switch l.Verdict {
		case Pass:
			c.Passed++
		case Interrupted:
			c.InterruptedRuns = append(c.InterruptedRuns, c.Runs)
		default:
			c.FailedRuns = append(c.FailedRuns, c.Runs)
		}
	}
	return out
}

// WriteCounts writes counts as an aligned table, one line per case, with
// the occurrences that failed or were interrupted:
//
//	normal_multiplex             30/30
//	late_response_dropped_by_id  28/30  failed in runs 4, 17
//	deadline_server_skips        29/30  interrupted in run 30
//
// A table line never starts with "CASE ", so ReadOutput skips it.
func WriteCounts(w io.Writer, counts []CaseCount) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range counts {
		fmt.Fprintf(tw, "%s\t%d/%d", c.Name, c.Passed, c.Runs)
		var notes []string
		if s := runsNote("failed", c.FailedRuns); s != "" {
			notes = append(notes, s)
		}
		if s := runsNote("interrupted", c.InterruptedRuns); s != "" {
			notes = append(notes, s)
		}
		if len(notes) > 0 {
			fmt.Fprintf(tw, "\t%s", strings.Join(notes, "; "))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("report: write counts: %w", err)
	}
	return nil
}

// runsNote returns "failed in run 3" or "failed in runs 4, 17", or "" for
// no runs.
func runsNote(what string, runs []int) string {
	switch len(runs) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("%s in run %d", what, runs[0])
	}
	s := make([]string, len(runs))
	for i, r := range runs {
		s[i] = strconv.Itoa(r)
	}
	return fmt.Sprintf("%s in runs %s", what, strings.Join(s, ", "))
}
