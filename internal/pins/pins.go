// Package pins judges what a stack under test did against what its
// expectations file says it does.
//
// A scenario that judges another stack observes, for each invariant it
// checks, whether the invariant held, was violated, or could not be
// checked because the stack lacks the capability. A violation is a
// finding about the stack, not a failure of rpcbench: what each (stack,
// configuration) is known to violate is pinned, one line each with its
// reason, in the stack's expectations file. The scenario passes when the
// observations and the pins agree; an unpinned violation fails it, and so
// does a pin whose violation no longer happens (a stale pin), so that a
// new version of the stack that changes its behaviour shows up either
// way.
//
// The file is plain text, one pin a line:
//
//	# comment
//	<config> <scenario> <invariant>  # <reason>
//	<config> <scenario> <invariant> sometimes  # <reason>
//
// The reason is required: a pin says why the stack does what it does.
// A pin marked sometimes is a violation that happens in some runs and
// not in others, a race of the stack's own that the scenario cannot
// force: either outcome agrees with it, and the scenario records the
// invariant as outcome.Sometimes, not as what this run saw. Blank lines
// and lines that start with # are ignored.
package pins

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/rpcbench/rpcbench/internal/outcome"
)

// Key names one pinned violation.
type Key struct {
	Config, Scenario, Invariant string
}

func (k Key) String() string { return k.Config + " " + k.Scenario + " " + k.Invariant }

// Pin is one line of an expectations file.
type Pin struct {
	Key
	Reason string
	// Sometimes: the violation happens in some runs only.
	Sometimes bool
	// Line is its line number in the file, for messages.
	Line int
	// Path is the file it was read from, for messages.
	Path string
}

// Pins are a stack's expectations file, read by Load.
type Pins struct {
	// Stack names the stack, as its adapter does.
	Stack string
	// Path is the file they were read from.
	Path string
	pins map[Key]Pin
}

// ErrSyntax is wrapped by the errors of a file that cannot be read as
// pins.
var ErrSyntax = errors.New("pins: bad expectations file")

// Known reports whether a key names a configuration, scenario and
// invariant that exist; Load refuses a pin that names anything else, so
// that a typo does not silently pin nothing.
type Known func(Key) error

// Load reads the expectations file of stack at path. A missing file is no
// pins at all. Every pin must be known.
func Load(stack, path string, known Known) (Pins, error) {
	p := Pins{Stack: stack, Path: path, pins: map[Key]Pin{}}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return p, err
	}
	defer f.Close()
	return p, p.read(f, known)
}

// Parse reads pins from r, as Load does from a file named path.
func Parse(stack, path string, r io.Reader, known Known) (Pins, error) {
	p := Pins{Stack: stack, Path: path, pins: map[Key]Pin{}}
	return p, p.read(r, known)
}

func (p *Pins) read(r io.Reader, known Known) error {
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		body, reason, ok := strings.Cut(line, "#")
		reason = strings.TrimSpace(reason)
		f := strings.Fields(body)
		sometimes := len(f) == 4 && f[3] == outcome.Sometimes.String()
		if sometimes {
			f = f[:3]
		}
		switch {
		case len(f) != 3:
			return fmt.Errorf("%w: %s:%d: want <config> <scenario> <invariant> [sometimes] # <reason>, got %q", ErrSyntax, p.Path, n, line)
		case !ok || reason == "":
			return fmt.Errorf("%w: %s:%d: %s has no reason: end the line with # and why the stack does this", ErrSyntax, p.Path, n, strings.Join(f, " "))
		}
		k := Key{Config: f[0], Scenario: f[1], Invariant: f[2]}
		if prev, dup := p.pins[k]; dup {
			return fmt.Errorf("%w: %s:%d: %s is pinned already on line %d", ErrSyntax, p.Path, n, k, prev.Line)
		}
		if err := known(k); err != nil {
			return fmt.Errorf("%w: %s:%d: %v", ErrSyntax, p.Path, n, err)
		}
		p.pins[k] = Pin{Key: k, Reason: reason, Line: n, Sometimes: sometimes, Path: p.Path}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("pins: read %s: %w", p.Path, err)
	}
	return nil
}

// Sometimes reports whether k is pinned as a violation that happens in
// some runs only.
func (p Pins) Sometimes(k Key) bool { return p.pins[k].Sometimes }

// Lookup returns the pin of k, if there is one.
func (p Pins) Lookup(k Key) (Pin, bool) {
	pin, ok := p.pins[k]
	return pin, ok
}

// All returns every pin, in file order.
func (p Pins) All() []Pin {
	out := make([]Pin, 0, len(p.pins))
	for _, pin := range p.pins {
		out = append(out, pin)
	}
	slices.SortFunc(out, func(a, b Pin) int { return a.Line - b.Line })
	return out
}

// Judgement is a scenario's verdict on one (stack, configuration): Agree
// when every observation matches the pins, else the disagreements, each
// one sentence; Findings, the invariants whose observation agreed with a
// pinned violation; AllUnsupported when the stack supported none of the
// invariants, so that the scenario is N/A.
type Judgement struct {
	Disagreements []string
	// Findings names each invariant observed as its pin says: violated,
	// or either way for a pin marked sometimes. It depends on the pins and
	// not on this run's luck, so that a sometimes-pinned race is a finding
	// in every run and two runs' verdicts compare equal.
	Findings       []string
	AllUnsupported bool
}

// Agree reports whether the observations and the pins agree.
func (j Judgement) Agree() bool { return len(j.Disagreements) == 0 }

// Judge compares what scenario observed under config with the pins:
//   - a violation with no pin disagrees (an unpinned violation);
//   - a pin whose invariant held disagrees (a stale pin);
//   - a pin whose invariant was unsupported disagrees too: the pin says
//     the stack was seen to violate something it now declares it cannot
//     do, which one of the two must be told;
//   - a pin of config and scenario on an invariant the scenario did not
//     observe at all disagrees (stale as well).
//
// An observation of any other outcome (none, Sometimes, which is a record
// and not an observation, or an unknown one) disagrees.
func (p Pins) Judge(config, scenario string, obs []outcome.Observation) Judgement {
	var j Judgement
	j.AllUnsupported = len(obs) > 0
	for _, o := range obs {
		k := Key{Config: config, Scenario: scenario, Invariant: o.Invariant}
		pin, pinned := p.pins[k]
		switch {
		case o.Outcome == outcome.Violated && !pinned:
			if p.Path == "" {
				j.Disagreements = append(j.Disagreements, fmt.Sprintf("%s: %s violated %s, and no pins file was given to pin it", o.Invariant, p.Stack, o.Invariant))
				break
			}
			j.Disagreements = append(j.Disagreements, fmt.Sprintf("%s: %s violated %s, and %s pins no such violation", o.Invariant, p.Stack, o.Invariant, p.Path))
		case pin.Sometimes && (o.Outcome == outcome.Holds || o.Outcome == outcome.Violated),
			o.Outcome == outcome.Violated && pinned:
			j.Findings = append(j.Findings, o.Invariant)
		case o.Outcome == outcome.Holds && pinned:
			j.Disagreements = append(j.Disagreements, fmt.Sprintf("%s: stale pin: %s:%d says %s violates it (%s), but it held", o.Invariant, pin.Path, pin.Line, p.Stack, pin.Reason))
		case o.Outcome == outcome.Unsupported && pinned:
			j.Disagreements = append(j.Disagreements, fmt.Sprintf("%s: %s:%d pins a violation, but %s declares it unsupported", o.Invariant, pin.Path, pin.Line, p.Stack))
		case o.Outcome != outcome.Holds && o.Outcome != outcome.Violated && o.Outcome != outcome.Unsupported:
			j.Disagreements = append(j.Disagreements, fmt.Sprintf("%s: observed %q", o.Invariant, o.Outcome))
		}
		j.AllUnsupported = j.AllUnsupported && o.Outcome == outcome.Unsupported
	}
	for _, pin := range p.All() {
		if pin.Config == config && pin.Scenario == scenario &&
			!slices.ContainsFunc(obs, func(o outcome.Observation) bool { return o.Invariant == pin.Invariant }) {
			j.Disagreements = append(j.Disagreements, fmt.Sprintf("%s: stale pin: %s:%d pins it, but %s does not check it", pin.Invariant, pin.Path, pin.Line, scenario))
		}
	}
	return j
}

// Merge returns the pins of over where covers says over speaks for a
// key's (configuration, scenario), and base's elsewhere: a stack at
// another release is pinned by what its own file covers and by the
// shipped release's file for the rest. Each pin keeps the file it came
// from, for messages; the result's Path names both.
func Merge(base, over Pins, covers func(config, scenario string) bool) Pins {
	m := Pins{Stack: over.Stack, Path: over.Path + " over " + base.Path, pins: map[Key]Pin{}}
	for k, p := range base.pins {
		if !covers(k.Config, k.Scenario) {
			m.pins[k] = p
		}
	}
	for k, p := range over.pins {
		if covers(k.Config, k.Scenario) {
			m.pins[k] = p
		}
	}
	return m
}

// Write writes ps as an expectations file that Load reads back: each
// line of header as a comment, then one pin a line, its columns aligned,
// its reason after #. A pin's reason may not hold a newline.
func Write(w io.Writer, header []string, ps []Pin) error {
	var b strings.Builder
	for _, h := range header {
		b.WriteString(strings.TrimRight("# "+h, " ") + "\n")
	}
	if len(header) > 0 && len(ps) > 0 {
		b.WriteString("\n")
	}
	inv := func(p Pin) string {
		if p.Sometimes {
			return p.Invariant + " " + outcome.Sometimes.String()
		}
		return p.Invariant
	}
	var wc, ws, wi int
	for _, p := range ps {
		wc, ws, wi = max(wc, len(p.Config)), max(ws, len(p.Scenario)), max(wi, len(inv(p)))
	}
	for _, p := range ps {
		if strings.ContainsAny(p.Reason, "\r\n") || strings.TrimSpace(p.Reason) == "" {
			return fmt.Errorf("pins: %s: a reason is one line, not empty", p.Key)
		}
		fmt.Fprintf(&b, "%-*s %-*s %-*s  # %s\n", wc, p.Config, ws, p.Scenario, wi, inv(p), p.Reason)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
