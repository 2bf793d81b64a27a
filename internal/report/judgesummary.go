package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/rpcbench/rpcbench/internal/outcome"
)

// JudgeSummary is what a judge run's Markdown summary says of the run
// itself, beside its lines.
type JudgeSummary struct {
	// Stacks names each adapter judged: stack, version, runtime, side and
	// command.
	Stacks []string
	// Configs are the client configurations' names.
	Configs []string
	// Expect is the pins file; "" for none.
	Expect string
	// Evidence is the evidence directory; "" for none.
	Evidence string
}

// maxSummaryRows bounds each list of the summary: a CI job summary is
// read, not searched.
const maxSummaryRows = 40

// WriteJudgeSummary writes a short Markdown summary of a judge run: what
// was judged, the totals, then the failures with why, the findings as
// (scenario, configuration, invariant) rows, and how many were n/a or
// skipped. It is meant for a CI job summary ($GITHUB_STEP_SUMMARY).
func WriteJudgeSummary(w io.Writer, s JudgeSummary, lines []Line) error {
	var b strings.Builder
	t := Tally(lines)
	verdict := "passed"
	if t.Failures() > 0 {
		verdict = "FAILED"
	}
	fmt.Fprintf(&b, "## rpcbench judge: %s\n\n", verdict)
	fmt.Fprintf(&b, "**%s**\n\n", t.String())
	for _, st := range s.Stacks {
		fmt.Fprintf(&b, "- judged: %s\n", st)
	}
	if len(s.Configs) > 0 {
		fmt.Fprintf(&b, "- client configurations: %s\n", strings.Join(s.Configs, ", "))
	}
	if s.Expect != "" {
		fmt.Fprintf(&b, "- pins: `%s` (a violation it does not pin fails, and so does a pin that no longer happens)\n", s.Expect)
	} else {
		b.WriteString("- pins: none, so every violation fails (write them with `--write-expect FILE`)\n")
	}
	if s.Evidence != "" {
		fmt.Fprintf(&b, "- evidence: `%s` (`rpcbench scorecard %s`, `rpcbench report %s`)\n", s.Evidence, s.Evidence, s.Evidence)
	}
	var failed, findings []string
	for _, l := range lines {
		switch {
		case l.Failed():
			failed = append(failed, fmt.Sprintf("- %s `%s`: %s", l.Verdict, l.Name, mdEscape(shorten(l.Why(), 300))))
		case l.Verdict == Finding:
			f := map[string]string{}
			for _, fl := range l.Fields {
				if _, ok := f[fl.Key]; !ok {
					f[fl.Key] = fl.Value
				}
			}
			var violated []string
			for _, o := range l.Observations() {
				if o.Outcome == outcome.Violated || o.Outcome == outcome.Sometimes {
					inv := o.Invariant
					if o.Outcome == outcome.Sometimes {
						inv += " (sometimes)"
					}
					violated = append(violated, inv)
				}
			}
			findings = append(findings, fmt.Sprintf("| %s | %s | %s | %s |", f[ScenarioKey], f["stack"], f["config"], strings.Join(violated, ", ")))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(&b, "\n### Failed or ERROR (%d)\n\n", len(failed))
		writeCapped(&b, failed)
	}
	if len(findings) > 0 {
		fmt.Fprintf(&b, "\n### Findings: pinned violations (%d)\n\n| scenario | stack | configuration | violated |\n|---|---|---|---|\n", len(findings))
		writeCapped(&b, findings)
	}
	if t.NotApplicable > 0 || t.Skipped > 0 {
		fmt.Fprintf(&b, "\n%d n/a (a capability the stack declares it lacks), %d skipped (a prerequisite this machine lacks).\n", t.NotApplicable, t.Skipped)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeCapped(b *strings.Builder, rows []string) {
	for i, r := range rows {
		if i == maxSummaryRows {
			fmt.Fprintf(b, "\n…and %d more: see the evidence.\n", len(rows)-i)
			return
		}
		b.WriteString(r + "\n")
	}
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// mdEscape keeps a why from breaking the Markdown around it.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}
