package report

import (
	"fmt"
	"strings"

	"github.com/google/go-cmp/cmp"
)

// Difference is how one case differs between an old and a new run.
type Difference struct {
	Name string
	// Occurrence is 1 for the first line called Name in a run, 2 for the
	// second (a case run twice), and so on.
	Occurrence int
	// Old and New are the two lines; one is nil when the case is absent
	// from that run.
	Old, New *Line
	// Stable is cmp.Diff of the stable fields (-old +new), as key→value
	// maps, or "" when they agree. A key repeated within a line appears
	// as key#2, key#3, ...
	Stable string
}

// Missing reports whether the case is in the old run only.
func (d Difference) Missing() bool { return d.New == nil }

// Added reports whether the case is in the new run only.
func (d Difference) Added() bool { return d.Old == nil }

// VerdictChanged reports whether the case passed in one run and failed in
// the other.
func (d Difference) VerdictChanged() bool {
	return d.Old != nil && d.New != nil && d.Old.Pass != d.New.Pass
}

// Diff compares two runs case by case and returns one Difference per case
// that differs, old run order first, then the cases only in new.
//
// Cases are matched by name, so their order does not matter: the k-th line
// called x in old is compared with the k-th line called x in new. A case
// differs when it is missing from either run, when its verdict changed, or
// when a stable field changed, appeared or disappeared. A field volatile in
// either line is never compared; String shows its values for context.
func Diff(old, new []Line) []Difference {
	type key struct {
		name string
		n    int
	}
	index := func(lines []Line) ([]key, map[key]*Line) {
		seen := map[string]int{}
		keys := make([]key, len(lines))
		m := make(map[key]*Line, len(lines))
		for i := range lines {
			seen[lines[i].Name]++
			keys[i] = key{lines[i].Name, seen[lines[i].Name]}
			m[keys[i]] = &lines[i]
		}
		return keys, m
	}
	oldKeys, oldByKey := index(old)
	newKeys, newByKey := index(new)

	var out []Difference
	for _, k := range oldKeys {
		d := Difference{Name: k.name, Occurrence: k.n, Old: oldByKey[k], New: newByKey[k]}
		if d.New != nil {
			d.Stable = cmp.Diff(stableFields(*d.Old, *d.New), stableFields(*d.New, *d.Old))
			if d.Stable == "" && !d.VerdictChanged() {
				continue
			}
		}
		out = append(out, d)
	}
	for _, k := range newKeys {
		if oldByKey[k] == nil {
			out = append(out, Difference{Name: k.name, Occurrence: k.n, New: newByKey[k]})
		}
	}
	return out
}

// stableFields returns l's fields as key→value, leaving out every key
// that is volatile in l or in other. The map is never nil, so that an
// empty set compares equal to another empty set.
func stableFields(l, other Line) map[string]string {
	volatile := map[string]bool{}
	for _, f := range append(l.Fields[:len(l.Fields):len(l.Fields)], other.Fields...) {
		if f.Volatile {
			volatile[f.Key] = true
		}
	}
	m := map[string]string{}
	seen := map[string]int{}
	for _, f := range l.Fields {
		if volatile[f.Key] {
			continue
		}
		seen[f.Key]++
		k := f.Key
		if seen[f.Key] > 1 {
			k = fmt.Sprintf("%s#%d", f.Key, seen[f.Key])
		}
		m[k] = f.Value
	}
	return m
}

// String renders d for a person: a header line naming the case and what
// changed, then indented detail lines, without a trailing newline.
func (d Difference) String() string {
	var b strings.Builder
	name := d.Name
	if d.Occurrence > 1 {
		name = fmt.Sprintf("%s (#%d)", d.Name, d.Occurrence)
	}
	switch {
	case d.Missing():
		fmt.Fprintf(&b, "%s: missing from new run\n    old: %s", name, Format(*d.Old))
		return b.String()
	case d.Added():
		fmt.Fprintf(&b, "%s: only in new run\n    new: %s", name, Format(*d.New))
		return b.String()
	}
	var what []string
	if d.VerdictChanged() {
		what = append(what, fmt.Sprintf("%s -> %s", d.Old.Verdict(), d.New.Verdict()))
	}
	if d.Stable != "" {
		what = append(what, "stable fields differ (-old +new):")
	}
	fmt.Fprintf(&b, "%s: %s", name, strings.Join(what, "; "))
	for _, s := range strings.Split(strings.TrimRight(d.Stable, "\n"), "\n") {
		if s != "" {
			b.WriteString("\n    " + s)
		}
	}
	if v := volatileSummary(*d.Old, *d.New); v != "" {
		b.WriteString("\n    volatile, not compared: " + v)
	}
	return b.String()
}

// volatileSummary lists the fields volatile in either line with both
// values: "elapsed 12ms -> 15ms, chunks 3 -> 3".
func volatileSummary(old, new Line) string {
	var keys []string
	seen := map[string]bool{}
	for _, f := range append(old.Fields[:len(old.Fields):len(old.Fields)], new.Fields...) {
		if f.Volatile && !seen[f.Key] {
			seen[f.Key] = true
			keys = append(keys, f.Key)
		}
	}
	value := func(l Line, k string) string {
		for _, f := range l.Fields {
			if f.Key == k {
				return quote(f.Value)
			}
		}
		return "(absent)"
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %s -> %s", k, value(old, k), value(new, k))
	}
	return strings.Join(parts, ", ")
}
