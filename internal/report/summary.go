package report

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Totals is what a summary line says: how many lines passed, failed,
// ended in ERROR, were interrupted and were skipped.
type Totals struct {
	Passed, Failed, Errors, Interrupted, Skipped int
}

// Tally counts lines by verdict. A line of a verdict this package does
// not know (none is written) counts as failed, as Line.Failed says.
func Tally(lines []Line) Totals {
	var t Totals
	for _, l := range lines {
		switch l.Verdict {
		case Pass:
			t.Passed++
		case Interrupted:
			t.Interrupted++
		case Skipped:
			t.Skipped++
		case Error:
			t.Errors++
		default:
			t.Failed++
		}
	}
	return t
}

// Summary returns the line that ends an output.txt: exactly
// "N passed, M failed", then ", 1 error" or ", E errors" when E > 0, then
// ", K interrupted" when K > 0, then ", J skipped" when J > 0. A run with
// none of them reads as it did before they existed.
func Summary(lines []Line) string { return Tally(lines).String() }

// String returns t as Summary writes it.
func (t Totals) String() string {
	s := fmt.Sprintf("%d passed, %d failed", t.Passed, t.Failed)
	switch {
	case t.Errors == 1:
		s += ", 1 error"
	case t.Errors > 1:
		s += fmt.Sprintf(", %d errors", t.Errors)
	}
	if t.Interrupted > 0 {
		s += fmt.Sprintf(", %d interrupted", t.Interrupted)
	}
	if t.Skipped > 0 {
		s += fmt.Sprintf(", %d skipped", t.Skipped)
	}
	return s
}

var summaryLine = regexp.MustCompile(`^(\d+) passed, (\d+) failed(?:, (\d+) errors?)?(?:, (\d+) interrupted)?(?:, (\d+) skipped)?$`)

// parseSummary reads a line Summary wrote, and also accepts ", 0 errors",
// ", 0 interrupted" and ", 0 skipped". A count too large for an int reads
// as -1, which no tally equals.
func parseSummary(s string) (Totals, bool) {
	m := summaryLine.FindStringSubmatch(s)
	if m == nil {
		return Totals{}, false
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
	return Totals{Passed: n(m[1]), Failed: n(m[2]), Errors: n(m[3]), Interrupted: n(m[4]), Skipped: n(m[5])}, true
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
	// ErrorRuns lists the 1-based occurrences that ended in ERROR; empty,
	// never nil, when none did.
	ErrorRuns []int
	// InterruptedRuns lists the 1-based occurrences that were interrupted;
	// empty, never nil, when none was.
	InterruptedRuns []int
	// SkippedRuns lists the 1-based occurrences that were skipped; empty,
	// never nil, when none was.
	SkippedRuns []int
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
			out = append(out, CaseCount{Name: l.Name, FailedRuns: []int{}, ErrorRuns: []int{}, InterruptedRuns: []int{}, SkippedRuns: []int{}})
		}
		c := &out[i]
		c.Runs++
		switch l.Verdict {
		case Pass:
			c.Passed++
		case Interrupted:
			c.InterruptedRuns = append(c.InterruptedRuns, c.Runs)
		case Skipped:
			c.SkippedRuns = append(c.SkippedRuns, c.Runs)
		case Error:
			c.ErrorRuns = append(c.ErrorRuns, c.Runs)
		default:
			c.FailedRuns = append(c.FailedRuns, c.Runs)
		}
	}
	return out
}

// WriteCounts writes counts as an aligned table, one line per case, with
// the occurrences that failed, ended in ERROR, were interrupted or were
// skipped:
//
//	normal_multiplex             30/30
//	late_response_dropped_by_id  28/30  failed in runs 4, 17
//	deadline_server_skips        29/30  interrupted in run 30
//
// (a skipped scenario is skipped in every run: "0/3  skipped in runs 1,
// 2, 3"). A table line never starts with "CASE ", so ReadOutput skips it.
func WriteCounts(w io.Writer, counts []CaseCount) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range counts {
		fmt.Fprintf(tw, "%s\t%d/%d", c.Name, c.Passed, c.Runs)
		var notes []string
		if s := runsNote("failed", c.FailedRuns); s != "" {
			notes = append(notes, s)
		}
		if s := runsNote("errored", c.ErrorRuns); s != "" {
			notes = append(notes, s)
		}
		if s := runsNote("interrupted", c.InterruptedRuns); s != "" {
			notes = append(notes, s)
		}
		if s := runsNote("skipped", c.SkippedRuns); s != "" {
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
