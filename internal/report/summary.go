package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Tally counts the passed and failed lines.
func Tally(lines []Line) (passed, failed int) {
	for _, l := range lines {
		if l.Pass {
			passed++
		} else {
			failed++
		}
	}
	return passed, failed
}

// Summary returns the line that ends an output.txt, exactly
// "N passed, M failed".
func Summary(lines []Line) string {
	passed, failed := Tally(lines)
	return fmt.Sprintf("%d passed, %d failed", passed, failed)
}

// CaseCount is how one case fared in a run that may hold it several times
// (rpcbench --count).
type CaseCount struct {
	Name string
	// Runs is how many lines the case has, Passed how many of them passed.
	Runs, Passed int
	// FailedRuns lists the 1-based occurrences that failed: 3 means the
	// case's third line. It is empty, never nil, when all passed.
	FailedRuns []int
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
			out = append(out, CaseCount{Name: l.Name, FailedRuns: []int{}})
		}
		c := &out[i]
		c.Runs++
		if l.Pass {
			c.Passed++
		} else {
			c.FailedRuns = append(c.FailedRuns, c.Runs)
		}
	}
	return out
}

// WriteCounts writes counts as an aligned table, one line per case, with
// the occurrences that failed:
//
//	normal_multiplex             30/30
//	late_response_dropped_by_id  28/30  failed in runs 4, 17
//
// A table line never starts with "CASE ", so ReadOutput skips it.
func WriteCounts(w io.Writer, counts []CaseCount) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range counts {
		fmt.Fprintf(tw, "%s\t%d/%d", c.Name, c.Passed, c.Runs)
		switch len(c.FailedRuns) {
		case 0:
		case 1:
			fmt.Fprintf(tw, "\tfailed in run %d", c.FailedRuns[0])
		default:
			runs := make([]string, len(c.FailedRuns))
			for i, r := range c.FailedRuns {
				runs[i] = strconv.Itoa(r)
			}
			fmt.Fprintf(tw, "\tfailed in runs %s", strings.Join(runs, ", "))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("report: write counts: %w", err)
	}
	return nil
}
