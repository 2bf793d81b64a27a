package judge

import (
	"fmt"

	"github.com/rpcbench/rpcbench/internal/pins"
	"github.com/rpcbench/rpcbench/internal/report"
)

// UnbackedSometimes returns, one sentence each, every pin of p marked
// sometimes that the evidence lines (a grpc group run's CASE lines) do
// not back. A sometimes pin says a violation happens in some trials and
// not in others; the evidence backs it only when the case of its stack,
// configuration and scenario tallied its invariant over repeated trials
// (Tally) and shows both outcomes: at least one trial held and at least
// one was violated. A scenario that makes one trial a run records no
// tally, so one run can never show both, and its pins cannot be
// sometimes: a violation it shows in every run is a plain pin, and one
// it shows in some runs only is for the scenario to stage in repeated
// trials first. Any other sometimes pin is stale.
//
// A violation rare enough that the group's own run seldom shows it (a
// race that needs a loaded machine) may be backed by a witness instead:
// the lines of another committed run of the same case (witness, from
// evidence/witness/), which show both outcomes with the very version
// of the stack that the group's evidence names. A new version of the
// stack makes the witness stale too.
func UnbackedSometimes(lines, witness []report.Line, p pins.Pins) []string {
	var out []string
	for _, pin := range p.All() {
		if !pin.Sometimes {
			continue
		}
		why := unbacked(lines, p.Stack, pin.Key, "")
		if why != "" && len(witness) > 0 {
			if w := unbacked(witness, p.Stack, pin.Key, versionOf(lines, p.Stack, pin.Key)); w == "" {
				why = ""
			} else {
				why += "; nor does a witness: " + w
			}
		}
		if why != "" {
			out = append(out, fmt.Sprintf("%s:%d: %s %s is pinned sometimes, but %s", p.Path, pin.Line, p.Stack, pin.Key, why))
		}
	}
	return out
}

// fieldsOf are a line's fields by key.
func fieldsOf(l report.Line) map[string]string {
	f := map[string]string{}
	for _, fl := range l.Fields {
		f[fl.Key] = fl.Value
	}
	return f
}

// versionOf is the stack version of k's case in lines, "" when none.
func versionOf(lines []report.Line, stack string, k pins.Key) string {
	for _, l := range lines {
		if f := fieldsOf(l); f["scenario"] == k.Scenario && f["stack"] == stack && f["config"] == k.Config {
			return f["version"]
		}
	}
	return ""
}

// unbacked says why the lines do not show both outcomes of k's
// invariant in stack's case, "" when they do; when version is not "",
// only a case of that stack version counts.
func unbacked(lines []report.Line, stack string, k pins.Key, version string) string {
	for _, l := range lines {
		f := fieldsOf(l)
		if f["scenario"] != k.Scenario || f["stack"] != stack || f["config"] != k.Config ||
			version != "" && f["version"] != version {
			continue
		}
		tally, ok := f[k.Invariant+TallySuffix]
		if !ok {
			return fmt.Sprintf("its case %s records no tally of it (no %s%s field): a scenario of one trial a run cannot show both outcomes, and evidence from before its scenario tallied shows neither", l.Name, k.Invariant, TallySuffix)
		}
		held, violated, err := ParseTally(tally)
		switch {
		case err != nil:
			return fmt.Sprintf("its case %s: %v", l.Name, err)
		case held == 0 || violated == 0:
			return fmt.Sprintf("its case %s shows one outcome only (%s): the pin is stale", l.Name, tally)
		}
		return ""
	}
	return "the evidence has no case of it"
}
