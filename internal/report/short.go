package report

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Short is the line a person reads on a terminal for l, as go test prints
// without -v: the verdict, the name padded to nameWidth, how long it took,
// then its checked fields (asserted and bounds) as far as width columns
// allow, cut with "…". A line that did not pass shows its why instead,
// whole, on the lines below. Format's CASE line stays the record: files
// and pipes get that.
func Short(l Line, d time.Duration, nameWidth, width int) string {
	head := fmt.Sprintf("%-4s %-*s %7s", l.Verdict, nameWidth, l.Name, formatElapsed(d))
	if why := l.Why(); !l.Passed() && why != "" {
		return head + "\n    " + strings.ReplaceAll(why, "\n", "\n    ")
	}
	var b strings.Builder
	b.WriteString(head)
	col := utf8.RuneCountInString(head)
	for _, f := range l.Fields {
		if f.Kind != Asserted && f.Kind != Bound && f.Kind != LowerBound {
			continue
		}
		s := FormatField(f)
		n := utf8.RuneCountInString(s)
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

// formatElapsed writes d as go test does its times: seconds with two
// decimals.
func formatElapsed(d time.Duration) string {
	return fmt.Sprintf("%.2fs", d.Seconds())
}
