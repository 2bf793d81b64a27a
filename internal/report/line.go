// Package report formats, parses and compares scenario results: the CASE
// lines of evidence/output.txt, the evidence directory and the diff.
//
// An output.txt holds one CASE line per scenario run, in the order they
// completed, then a summary line:
//
//	CASE <name> <verdict> <field> <field> ...
//	N passed, M failed[, E errors][, K interrupted][, J skipped][, F findings][, A n/a]
//
// The verdict is PASS, FINDING, N/A, FAIL, ERROR, INTERRUPTED or SKIP
// (see Verdict): a FINDING is a stack's pinned violation, shown apart
// from PASS and not a failure; a stack that lacks what a configuration
// needs is N/A; a scenario stopped by a signal is neither passed nor
// failed, and so is one that was not run because a prerequisite
// (PostgreSQL, test hosts) is missing on this machine; a SKIP line's why
// field says which and how to get it. The summary counts the CASE lines
// above it, and names errors, interrupted, skipped, findings and n/a
// ones only when there are some. Each field is a
// key, an operator that gives the field's Kind, and a value:
//
//	key=value   Recorded: stable, compared by Diff, not asserted
//	key==value  Asserted: stable; the scenario failed unless the value held
//	key<=value  Bound: stable; the scenario checked that the measured value,
//	            normally a volatile field of the same key on the same line,
//	            was at most value
//	key>=value  LowerBound: stable; the measured value was at least value
//	key~=value  Volatile: shown, never compared (times, chunk counts)
//	key:=value  Outcome: stable; the key is an invariant of a judged stack,
//	            the value what the stack did with it (package outcome's
//	            words), and the scenario failed unless that agreed with
//	            the stack's pins
//
// A key is non-empty and holds no white space, '=', '~', '<', '>' or ':'. How a value
// is written (bare, [bracketed] or "quoted") is in Format's doc.
package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rpcbench/rpcbench/internal/outcome"
)

// Kind says what a field's value claims, and so whether Diff compares it.
// The zero Kind is Recorded.
type Kind int

const (
	// Recorded is written key=value: a stable value, compared by Diff,
	// that the scenario did not check.
	Recorded Kind = iota
	// Asserted is written key==value: a stable value that the scenario
	// checked; it failed unless the value held.
	Asserted
	// Bound is written key<=value: a stable upper bound that the scenario
	// checked the measured value against. The measured value is normally
	// a Volatile field of the same key on the same line:
	// "elapsed~=23ms elapsed<=100ms".
	Bound
	// Volatile is written key~=value: a value that legitimately differs
	// between runs (times, random chunk counts). It is shown but never
	// compared.
	Volatile
	// LowerBound is written key>=value: a stable lower bound that the
	// scenario checked the measured value against, as Bound is an upper
	// one.
	LowerBound
	// Outcome is written key:=value: what a judged stack did with the
	// invariant named by the key, an outcome.Outcome, which the scenario
	// checked against the stack's pins. Parse refuses a value that names
	// no outcome; Line.Observations reads them back typed.
	Outcome
)

var kinds = [...]struct{ name, op string }{
	Recorded:   {"recorded", "="},
	Asserted:   {"asserted", "=="},
	Bound:      {"bound", "<="},
	Volatile:   {"volatile", "~="},
	LowerBound: {"lower-bound", ">="},
	Outcome:    {"outcome", ":="},
}

// String returns "recorded", "asserted", "bound", "volatile",
// "lower-bound" or "outcome", and UNKNOWN_KIND_<n> for any other value.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kinds) {
		return kinds[k].name
	}
	return fmt.Sprintf("UNKNOWN_KIND_%d", int(k))
}

// Op returns the operator Format writes between a field's key and value.
// An unknown Kind gets one that puts a '~' inside the key, which Parse
// refuses, so that the field cannot pass for a known kind.
func (k Kind) Op() string {
	if k >= 0 && int(k) < len(kinds) {
		return kinds[k].op
	}
	return "~" + k.String() + "~="
}

// Field is one key and value of a CASE line.
type Field struct {
	// Key must be non-empty and hold no white space, '=', '~', '<', '>' or ':': Format
	// writes it verbatim, and Parse finds its end at the operator.
	Key   string
	Value string
	Kind  Kind
}

// Line is one scenario's result: CASE <name> <verdict> <fields>.
type Line struct {
	Name    string
	Verdict Verdict
	Fields  []Field
}

// Observations returns the line's Outcome fields, typed, in line order.
// Parse has refused a line whose outcome names no outcome; a Line made
// in code with such a value gets the zero Outcome for it.
func (l Line) Observations() []outcome.Observation {
	var out []outcome.Observation
	for _, f := range l.Fields {
		if f.Kind == Outcome {
			o, _ := outcome.Parse(f.Value)
			out = append(out, outcome.Observation{Invariant: f.Key, Outcome: o})
		}
	}
	return out
}

// Skip returns the line of a scenario that was not run: CASE <name> SKIP
// why=<why>. why names the missing prerequisite and how to get it.
func Skip(name, why string) Line {
	return Line{Name: name, Verdict: Skipped, Fields: []Field{{Key: WhyKey, Value: why}}}
}

// WhyKey is the key of the field that says why a scenario did not pass:
// what failed, or what a skipped one lacked.
const WhyKey = "why"

// Why returns the line's why field, "" when it has none.
func (l Line) Why() string {
	for _, f := range l.Fields {
		if f.Key == WhyKey {
			return f.Value
		}
	}
	return ""
}

// Passed reports whether the scenario passed. A skipped or interrupted
// scenario did not pass, and did not fail either: see Failed.
func (l Line) Passed() bool { return l.Verdict == Pass }

// Failed reports whether the line counts as failed: its verdict is FAIL,
// ERROR, or one this package does not know, so that a line nobody judged
// never passes for a good one. PASS, FINDING, N/A, INTERRUPTED and SKIP
// are not failures. Tally counts ERROR apart.
func (l Line) Failed() bool {
	switch l.Verdict {
	case Pass, Finding, NotApplicable, Interrupted, Skipped:
		return false
	}
	return true
}

// Format renders l as one line without a trailing newline; Parse reads it
// back. Name must be non-empty and hold no white space. The line is
//
//	CASE <name> PASS|FAIL|ERROR|INTERRUPTED|SKIP key=value key==value key<=value key~=value ...
//
// with one space between items and each field written as its key, its
// Kind's operator (= Recorded, == Asserted, <= Bound, >= LowerBound,
// ~= Volatile, := Outcome) and its value.
//
// Newlines in a value become spaces, so a CASE line is always one line;
// everything else survives Parse(Format(l)). A value is written
//   - bare, when it is non-empty, holds no space or control character and
//     starts with none of '[', '"' and '=';
//   - as [value], when its square brackets balance and it holds no control
//     character other than tab;
//   - Go-quoted ("...", strconv.Quote) otherwise: only a value with an
//     unbalanced bracket or a control character, which [...] cannot hold.
func Format(l Line) string {
	var b strings.Builder
	b.WriteString("CASE ")
	b.WriteString(l.Name)
	b.WriteByte(' ')
	b.WriteString(l.Verdict.String())
	for _, f := range l.Fields {
		b.WriteByte(' ')
		b.WriteString(f.Key)
		b.WriteString(f.Kind.Op())
		b.WriteString(quote(f.Value))
	}
	return b.String()
}

// FormatField renders one field as Format writes it: key, operator,
// value.
func FormatField(f Field) string { return f.Key + f.Kind.Op() + quote(f.Value) }

func quote(v string) string {
	v = strings.ReplaceAll(v, "\n", " ")
	switch {
	case v != "" && v[0] != '[' && v[0] != '"' && v[0] != '=' && !hasSpaceOrControl(v, false):
		// Not '=': "k==x" would read back as an asserted "x".
		return v
	case balanced(v) && !hasSpaceOrControl(v, true):
		return "[" + v + "]"
	default:
		return strconv.Quote(v)
	}
}

// hasSpaceOrControl reports whether v holds an ASCII space or control
// character; with inBrackets, space and tab are allowed.
func hasSpaceOrControl(v string, inBrackets bool) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if inBrackets && (c == ' ' || c == '\t') {
			continue
		}
		if c <= ' ' || c == 0x7f {
			return true
		}
	}
	return false
}

// balanced reports whether every ']' in v closes an earlier '[' and every
// '[' is closed, which is what lets Parse find the end of [v].
func balanced(v string) bool {
	depth := 0
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '[':
			depth++
		case ']':
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}
