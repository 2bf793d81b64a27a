// Package outcome is the vocabulary of what a judged stack did with one
// invariant: the words every other package reads and writes through it.
package outcome

import (
	"errors"
	"fmt"
	"strings"
)

// Outcome is what a scenario recorded of one invariant of a judged
// stack. The zero Outcome is none: nothing was recorded.
type Outcome uint8

const (
	// Holds: the invariant held.
	Holds Outcome = iota + 1
	// Violated: the evidence shows the stack broke it.
	Violated
	// Unsupported: the stack lacks what the invariant needs (it declared
	// so), and it was not checked.
	Unsupported
	// Sometimes is recorded instead of Holds or Violated for a violation
	// the stack's expectations pin as happening in some runs only (a race
	// of the stack's own): either outcome agrees with the pin, and the
	// record says so rather than what one run saw.
	Sometimes
)

var names = [...]string{Holds: "holds", Violated: "violated", Unsupported: "unsupported", Sometimes: "sometimes"}

// String returns the outcome's word, "" for none and
// unknown_outcome_<n> for a value this package does not define.
func (o Outcome) String() string {
	if int(o) < len(names) {
		return names[o]
	}
	return fmt.Sprintf("unknown_outcome_%d", uint8(o))
}

// Broken reports whether the outcome shows the invariant broken, in this
// run or, for Sometimes, in some runs.
func (o Outcome) Broken() bool { return o == Violated || o == Sometimes }

// ErrUnknown is wrapped by Parse's error for a word that names no
// outcome.
var ErrUnknown = errors.New("outcome: unknown outcome")

// Parse returns the outcome called s.
func Parse(s string) (Outcome, error) {
	for o := Holds; int(o) < len(names); o++ {
		if names[o] == s {
			return o, nil
		}
	}
	return 0, fmt.Errorf("%w %q (want one of %s)", ErrUnknown, s, strings.Join(names[Holds:], ", "))
}

// MarshalText writes the outcome's word; none is "".
func (o Outcome) MarshalText() ([]byte, error) {
	if int(o) >= len(names) {
		return nil, fmt.Errorf("outcome: cannot write %v", o)
	}
	return []byte(names[o]), nil
}

// UnmarshalText reads what MarshalText writes.
func (o *Outcome) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*o = 0
		return nil
	}
	v, err := Parse(string(b))
	*o = v
	return err
}

// Observation is one invariant's outcome.
type Observation struct {
	Invariant string
	Outcome   Outcome
}
