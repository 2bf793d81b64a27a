package report

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Short is the line a person reads on a terminal for l, as go test prints
// without -v: the verdict, the name padded to nameWidth, how long it took,
// then a judged stack's invariants (Outcome), then its other checked
// fields (asserted, and bounds), then its other stable fields (what was
// observed: executions=2, code=OK), as far as width columns allow, cut
// with "…". The fields that only name the column (ColumnKeys) are left
// out: the name says them. A FINDING's fields are never cut: those that
// do not fit go on indented lines below. A line that did not pass and is
// not a FINDING shows its why instead, whole, on the lines below. Format's CASE line
// stays the record: files and pipes get that.
func Short(l Line, d time.Duration, nameWidth, width int) string {
	head := fmt.Sprintf("%-7s %-*s %7s", l.Verdict, nameWidth, l.Name, formatElapsed(d))
	if why := l.Why(); !l.Passed() && l.Verdict != Finding && why != "" {
		return head + "\n    " + strings.ReplaceAll(why, "\n", "\n    ")
	}
	var shown []Field
	for _, f := range l.Fields {
		if f.Kind == Outcome {
			shown = append(shown, f)
		}
	}
	for _, f := range l.Fields {
		if f.Kind == Asserted || f.Kind == Bound || f.Kind == LowerBound {
			shown = append(shown, f)
		}
	}
	for _, f := range l.Fields {
		if f.Kind == Recorded && f.Key != WhyKey && !slices.Contains(ColumnKeys, f.Key) {
			shown = append(shown, f)
		}
	}
	var b strings.Builder
	b.WriteString(head)
	col := utf8.RuneCountInString(head)
	for _, f := range shown {
		s := FormatField(f)
		n := utf8.RuneCountInString(s)
		if col+2+n > width && l.Verdict == Finding && col > 4 {
			// A finding is what a person runs the scenario to see: its
			// fields go on below, indented, rather than behind a "…".
			b.WriteString("\n    " + s)
			col = 4 + n
			continue
		}
		if col+2+n > width {
			if col+3 <= width {
				b.WriteString("  …")
			}
			break
		}
		b.WriteString("  " + s)
		col += 2 + n
	}
	return b.String()
}

// ColumnKeys are the keys of the fields that name a judged line's column,
// which its name already says: Short leaves them out.
var ColumnKeys = []string{ScenarioKey, "stack", "config", "version"}

// formatElapsed writes d as go test does its times: seconds with two
// decimals.
func formatElapsed(d time.Duration) string {
	return fmt.Sprintf("%.2fs", d.Seconds())
}
