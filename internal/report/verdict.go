package report

import (
	"fmt"
	"io"

	"github.com/fatih/color"
)

// Verdict is the outcome of a judgement: a scenario's (a CASE line), a
// conform check's (a CHECK line), a chaos checker's or a whole chaos
// run's (CHECK and CHAOS lines). The zero Verdict is Fail, so that an
// outcome nobody judged does not pass.
//
// A Verdict is only ever written as its String, never as its number, so
// the constants may grow but must not be reordered (Fail stays 0). A new
// verdict is a constant appended below and its row in verdicts: its word,
// its colour and whether a CASE line may carry it. Every place that
// counts or classifies verdicts (Line.Failed, Tally, CountByCase,
// Result.Status, WriteJUnit) treats a verdict it does not name as a
// failure, so a new one never passes for PASS before each of them is
// taught it.
type Verdict int

const (
	// Fail: a check failed, or the scenario could not run.
	Fail Verdict = iota
	// Pass: every check held.
	Pass
	// Interrupted: a signal stopped the scenario before it completed; it
	// neither passed nor failed.
	Interrupted
	// Skipped, written SKIP: the scenario was not run because a
	// prerequisite is missing on this machine; it neither passed nor
	// failed. Its line has a why field naming what is missing and how to
	// get it (see Skip).
	Skipped
	// Unknown: a check could not decide (chaos's linearizability check ran
	// out of time). Only CHECK and CHAOS lines carry it, never a CASE
	// line; whoever acts on it treats it as not passed.
	Unknown
	// Error: rpcbench could not establish what happened, because
	// something it drives broke its contract: a client adapter that does
	// not speak the client-under-test protocol, dies or hangs. It is not
	// a finding about the stack under test, and it is counted apart from
	// FAIL; like FAIL it is not a pass.
	Error
	// Finding: the stack under test violated an invariant, the evidence
	// shows it, and the stack's expectations file pins that violation
	// with its reason. Every check of rpcbench's own held; the line is
	// what the stack does, not a failure, and it is counted apart from
	// PASS so that a violation never reads as "safe".
	Finding
	// NotApplicable, written N/A: the configuration needs a capability
	// the stack under test declares it lacks, so nothing was run. Like
	// SKIP it is neither passed nor failed; unlike SKIP, no prerequisite
	// of this machine is missing, and running it elsewhere changes
	// nothing. Its why field names what the stack lacks.
	NotApplicable
)

// verdicts is indexed by Verdict.
var verdicts = [...]struct {
	word  string
	color []color.Attribute
	// onCase: a CASE line may carry the verdict, so Parse accepts it.
	onCase bool
}{
	Fail:          {"FAIL", []color.Attribute{color.FgRed}, true},
	Pass:          {"PASS", []color.Attribute{color.FgGreen}, true},
	Interrupted:   {"INTERRUPTED", []color.Attribute{color.FgYellow}, true},
	Skipped:       {"SKIP", []color.Attribute{color.FgYellow, color.Faint}, true},
	Unknown:       {"UNKNOWN", []color.Attribute{color.FgYellow}, false},
	Error:         {"ERROR", []color.Attribute{color.FgMagenta}, true},
	Finding:       {"FINDING", []color.Attribute{color.FgHiRed, color.Bold}, true},
	NotApplicable: {"N/A", []color.Attribute{color.Faint}, true},
}

// String returns the verdict as a line writes it: "PASS", "FAIL",
// "INTERRUPTED", "SKIP", "UNKNOWN", "ERROR", "FINDING" or "N/A", and
// UNKNOWN_VERDICT_<n> for any other value.
func (v Verdict) String() string {
	if v.known() {
		return verdicts[v].word
	}
	return fmt.Sprintf("UNKNOWN_VERDICT_%d", int(v))
}

func (v Verdict) known() bool { return v >= 0 && int(v) < len(verdicts) }

// CaseVerdict returns the verdict whose word is s, one a CASE line may
// carry, for a reader that kept the word (the scorecard's cells).
func CaseVerdict(s string) (Verdict, bool) { return parseCaseVerdict(s) }

// parseCaseVerdict reads the verdict word of a CASE line: one of those a
// CASE line may carry.
func parseCaseVerdict(s string) (Verdict, bool) {
	for v, row := range verdicts {
		if row.onCase && s == row.word {
			return Verdict(v), true
		}
	}
	return 0, false
}

// Agrees reports whether a scenario of this verdict ran as its pins say,
// so that it needs nobody's attention: PASS, FINDING and N/A. SKIP and
// INTERRUPTED do not fail, but the scenario did not run to the end.
func (v Verdict) Agrees() bool { return v == Pass || v == Finding || v == NotApplicable }

// PassIf returns Pass when ok and Fail otherwise.
func PassIf(ok bool) Verdict {
	if ok {
		return Pass
	}
	return Fail
}

// VerdictPainter returns a function that writes a verdict's word for w
// under m: coloured (PASS green, FAIL red, FINDING bold bright red,
// INTERRUPTED and UNKNOWN yellow, SKIP faint yellow, N/A faint, ERROR
// magenta) when UseColor(w, m) says so, as decided
// once, now; an unknown verdict is never coloured. Printer colours CASE
// lines with it, and chaos and conform their CHECK and CHAOS lines.
func VerdictPainter(w io.Writer, m ColorMode) func(Verdict) string {
	on := UseColor(w, m)
	var cs [len(verdicts)]*color.Color
	for v, row := range verdicts {
		cs[v] = color.New(row.color...)
		if on {
			cs[v].EnableColor()
		} else {
			cs[v].DisableColor()
		}
	}
	return func(v Verdict) string {
		if v.known() {
			return cs[v].Sprint(v.String())
		}
		return v.String()
	}
}
