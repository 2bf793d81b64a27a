package report

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Totals is what a summary line says: how many lines passed, failed,
// ended in ERROR, were interrupted, were skipped, were findings and were
// n/a.
type Totals struct {
	Passed, Failed, Errors, Interrupted, Skipped, Findings, NotApplicable int
}

// Failures is how many lines failed or ended in ERROR: what makes a run's
// exit status 1.
func (t Totals) Failures() int { return t.Failed + t.Errors }

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
		case Finding:
			t.Findings++
		case NotApplicable:
			t.NotApplicable++
		default:
			t.Failed++
		}
	}
	return t
}

// Summary returns the line that ends an output.txt: exactly
// "N passed, M failed", then ", 1 error" or ", E errors" when E > 0, then
// ", K interrupted" when K > 0, then ", J skipped" when J > 0, then
// ", 1 finding" or ", F findings" when F > 0, then ", A n/a" when A > 0.
// A run with none of them reads as it did before they existed. A FINDING
// is not counted as passed: "passed" means every invariant held.
func Summary(lines []Line) string { return Tally(lines).String() }

// String returns t as Summary writes it.
func (t Totals) String() string {
	s := fmt.Sprintf("%d passed, %d failed", t.Passed, t.Failed)
	if t.Errors > 0 {
		s += ", " + count(t.Errors, "error", "errors")
	}
	if t.Interrupted > 0 {
		s += fmt.Sprintf(", %d interrupted", t.Interrupted)
	}
	if t.Skipped > 0 {
		s += fmt.Sprintf(", %d skipped", t.Skipped)
	}
	if t.Findings > 0 {
		s += ", " + count(t.Findings, "finding", "findings")
	}
	if t.NotApplicable > 0 {
		s += fmt.Sprintf(", %d n/a", t.NotApplicable)
	}
	return s
}

var summaryLine = regexp.MustCompile(`^(\d+) passed, (\d+) failed(?:, (\d+) errors?)?(?:, (\d+) interrupted)?(?:, (\d+) skipped)?(?:, (\d+) findings?)?(?:, (\d+) n/a)?$`)

// parseSummary reads a line Summary wrote, and also accepts ", 0 errors",
// ", 0 interrupted", ", 0 skipped", ", 0 findings" and ", 0 n/a". A count too large for an int reads
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
	return Totals{Passed: n(m[1]), Failed: n(m[2]), Errors: n(m[3]), Interrupted: n(m[4]), Skipped: n(m[5]), Findings: n(m[6]), NotApplicable: n(m[7])}, true
}

// CaseCount is how one case fared in a run that may hold it several times
// (rpcbench --count).
type CaseCount struct {
	Name string
	// Runs is how many lines the case has, Passed how many of them ran as
	// pinned: PASS, FINDING or N/A (Verdict.Agrees), so that a stack's
	// steady finding reads 30/30 under --count, not 0/30.
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
		case Pass, Finding, NotApplicable:
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

// ScenarioKey is the field a judged line names its scenario with, apart
// from its column (grpc_close_after_exec for the line
// grpc_close_after_exec_grpcgo_retry).
const ScenarioKey = "scenario"

// Notes returns the lines a person reads above the summary: the findings
// named, grouped by scenario with their columns, and the n/a counted by
// what the stacks lack; nothing when there are neither. Each note is one
// line. A finding is what a stack does, not a failure of the run, so it
// is named where nobody can take it for a pass.
func Notes(lines []Line) []string {
	var order []string
	cols := map[string][]string{}
	var whys []string
	na := map[string]int{}
	findings, nas := 0, 0
	for _, l := range lines {
		switch l.Verdict {
		case Finding:
			findings++
			sc := l.Name
			for _, f := range l.Fields {
				if f.Key == ScenarioKey && strings.HasPrefix(l.Name, f.Value+"_") {
					sc = f.Value
				}
			}
			if _, ok := cols[sc]; !ok {
				order = append(order, sc)
			}
			if col := strings.TrimPrefix(strings.TrimPrefix(l.Name, sc), "_"); col != "" && !slices.Contains(cols[sc], col) {
				cols[sc] = append(cols[sc], col)
			} else if cols[sc] == nil {
				cols[sc] = []string{}
			}
		case NotApplicable:
			nas++
			why := l.Why()
			if _, ok := na[why]; !ok {
				whys = append(whys, why)
			}
			na[why]++
		}
	}
	var out []string
	if findings > 0 {
		parts := make([]string, len(order))
		for i, sc := range order {
			parts[i] = sc
			if len(cols[sc]) > 0 {
				parts[i] += " (" + strings.Join(cols[sc], ", ") + ")"
			}
		}
		out = append(out, fmt.Sprintf("%s, pinned violations of the stacks under test, not failures: %s",
			count(findings, "finding", "findings"), strings.Join(parts, "; ")))
	}
	if nas > 0 {
		parts := make([]string, len(whys))
		for i, w := range whys {
			label := w
			if label == "" {
				label = "no reason given"
			}
			parts[i] = fmt.Sprintf("%d %s", na[w], label)
		}
		out = append(out, fmt.Sprintf("%d n/a, not judged, not failures: %s", nas, strings.Join(parts, "; ")))
	}
	return out
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
