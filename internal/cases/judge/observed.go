package judge

import (
	"fmt"
	"slices"

	"github.com/rpcbench/rpcbench/internal/outcome"
	"github.com/rpcbench/rpcbench/internal/pins"
	"github.com/rpcbench/rpcbench/internal/report"
)

// Observed returns, as pins, the violations lines show of stack: each
// outcome field violated, or sometimes (a pin said so and this run
// agreed), on a case of stack's column, in run order, each with the
// reason given. It is what judge --write-expect writes, so that a second
// run judges against what the first observed.
func Observed(lines []report.Line, stack, reason string) []pins.Pin {
	var out []pins.Pin
	for _, l := range lines {
		f := fieldsOf(l)
		if f["stack"] != stack || f["scenario"] == "" || f["config"] == "" {
			continue
		}
		for _, fl := range l.Fields {
			if fl.Kind != report.Outcome {
				continue
			}
			o, _ := outcome.Parse(fl.Value)
			if o != outcome.Violated && o != outcome.Sometimes {
				continue
			}
			k := pins.Key{Config: f["config"], Scenario: f["scenario"], Invariant: fl.Key}
			if slices.ContainsFunc(out, func(p pins.Pin) bool { return p.Key == k }) {
				continue // a case run --count times
			}
			out = append(out, pins.Pin{Key: k, Reason: reason, Sometimes: o == outcome.Sometimes})
		}
	}
	return out
}

// PlaceholderReason is the reason --write-expect gives each pin: the
// user replaces it with why their stack does this.
func PlaceholderReason(stack string) string {
	return fmt.Sprintf("TODO: why %s does this (observed by rpcbench judge; a stale pin fails the run)", stack)
}
