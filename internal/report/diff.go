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
	// Fields lists the fields that differ, in the order they appear in
	// Old, then those only in New. It is empty when the case is missing
	// or added, and when its verdict changed to or from SKIP: a skipped
	// case ran nothing, so its fields (a why, normally) say nothing
	// about those of a case that ran.
	Fields []FieldChange
}

// FieldChange is one field that differs between a case's old and new
// line: its value changed, its kind changed, or it is in one line only.
type FieldChange struct {
	// Key is the field's key, with "#2", "#3", ... appended for the second
	// and later fields of the same key and class in a line.
	Key string
	// Old and New are the field in each line; one is nil when the field
	// is absent from that line.
	Old, New *Field
}

// Missing reports whether the case is in the old run only.
func (d Difference) Missing() bool { return d.New == nil }

// Added reports whether the case is in the new run only.
func (d Difference) Added() bool { return d.Old == nil }

// VerdictChanged reports whether the case is in both runs with different
// verdicts.
func (d Difference) VerdictChanged() bool {
	return d.Old != nil && d.New != nil && d.Old.Verdict != d.New.Verdict
}

// skipChanged reports whether the case is in both runs and skipped in
// exactly one of them.
func (d Difference) skipChanged() bool {
	return d.VerdictChanged() && (d.Old.Verdict == Skipped || d.New.Verdict == Skipped)
}

// Diff compares two runs case by case and returns one Difference per case
// that differs, old run order first, then the cases only in new.
//
// Cases are matched by name, so their order does not matter: the k-th line
// called x in old is compared with the k-th line called x in new. A case
// differs when
//   - it is missing from either run;
//   - its verdict changed, SKIP included: a scenario that passed in one
//     run and was skipped in the other proved nothing in the second, and
//     its fields are then not compared;
//   - a stable field (recorded, asserted, an upper or lower bound, or a
//     judged stack's outcome) changed its value,
//     appeared or disappeared;
//   - a field changed its kind, between stable and volatile or between
//     recorded and asserted, even with the same value: a kind change
//     changes what the evidence claims (that a value was checked, or that
//     it can be compared at all), so it needs a person's look as much as a
//     value change does.
//
// A field volatile in both lines is never compared, and one volatile in
// the only line that has it is not a difference; neither is in Fields or
// in String's text, whose reader wants what changed among the values the
// evidence stands by, not times that differ on every run.
//
// Fields are matched by key and by their position among the fields of the
// same key in the line. A bound is matched only with bounds of the same
// direction, since it
// normally sits next to the measured field of the same key:
// "elapsed~=23ms elapsed<=100ms" holds the volatile elapsed and the bound
// elapsed.
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
		if d.New != nil && !d.skipChanged() {
			d.Fields = diffFields(*d.Old, *d.New)
			if len(d.Fields) == 0 && !d.VerdictChanged() {
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

// fieldID names a field within a line: its key, which bound it is (none,
// upper or lower), and its position among the fields of that key and
// class. A bound is compared with the same bound of the same key only.
type fieldID struct {
	key   string
	bound Kind // Bound, LowerBound, or Recorded for any other field
	n     int
}

func (id fieldID) String() string {
	if id.n > 1 {
		return fmt.Sprintf("%s#%d", id.key, id.n)
	}
	return id.key
}

// fieldsByID returns l's fields by ID, and the IDs in line order.
func fieldsByID(l Line) (map[fieldID]Field, []fieldID) {
	m := make(map[fieldID]Field, len(l.Fields))
	ids := make([]fieldID, len(l.Fields))
	seen := map[fieldID]int{}
	for i, f := range l.Fields {
		id := fieldID{key: f.Key}
		if f.Kind == Bound || f.Kind == LowerBound {
			id.bound = f.Kind
		}
		seen[id]++
		id.n = seen[id]
		m[id], ids[i] = f, id
	}
	return m, ids
}

// compared returns what Diff compares of the fields m against those of
// the other line: a field volatile in both has its value blanked, and a
// volatile one that other lacks is left out. Everything else, kinds
// included, is kept as it is.
func compared(m, other map[fieldID]Field) map[fieldID]Field {
	out := make(map[fieldID]Field, len(m))
	for id, f := range m {
		if f.Kind == Volatile {
			o, ok := other[id]
			if !ok {
				continue
			}
			if o.Kind == Volatile {
				f.Value = ""
			}
		}
		out[id] = f
	}
	return out
}

// diffFields returns the fields that differ between old and new.
func diffFields(old, new Line) []FieldChange {
	oldByID, oldIDs := fieldsByID(old)
	newByID, newIDs := fieldsByID(new)
	var r idReporter
	cmp.Equal(compared(oldByID, newByID), compared(newByID, oldByID), cmp.Reporter(&r))

	var out []FieldChange
	for _, id := range append(oldIDs, newIDs...) {
		if !r.differ[id] {
			continue
		}
		delete(r.differ, id) // report each once
		c := FieldChange{Key: id.String()}
		if f, ok := oldByID[id]; ok {
			c.Old = &f
		}
		if f, ok := newByID[id]; ok {
			c.New = &f
		}
		out = append(out, c)
	}
	return out
}

// idReporter is a cmp.Reporter that collects the map keys under which two
// map[fieldID]Field differ.
type idReporter struct {
	path   cmp.Path
	differ map[fieldID]bool
}

func (r *idReporter) PushStep(s cmp.PathStep) { r.path = append(r.path, s) }
func (r *idReporter) PopStep()                { r.path = r.path[:len(r.path)-1] }

func (r *idReporter) Report(res cmp.Result) {
	if res.Equal() {
		return
	}
	for _, s := range r.path {
		if mi, ok := s.(cmp.MapIndex); ok {
			if r.differ == nil {
				r.differ = map[fieldID]bool{}
			}
			r.differ[mi.Key().Interface().(fieldID)] = true
			return
		}
	}
}

// String renders c for a person, in one line of plain text that depends
// only on c:
//
//	lateDropped 1 -> 0               a recorded value changed
//	lateDropped ==1 -> ==0           an asserted (or bound) value changed
//	field y appeared (=3)            y is in the new line only
//	field y disappeared (was ==3)    y is in the old line only
//	field y recorded -> asserted (=3 -> ==3)
//
// Values are written as Format writes them. A value change shows each
// value after its kind's operator, except that a recorded value is shown
// bare; every other change shows the operators.
func (c FieldChange) String() string {
	switch {
	case c.Old == nil && c.New == nil:
		return fmt.Sprintf("field %s absent from both runs", c.Key)
	case c.Old == nil:
		return fmt.Sprintf("field %s appeared (%s)", c.Key, opValue(*c.New))
	case c.New == nil:
		return fmt.Sprintf("field %s disappeared (was %s)", c.Key, opValue(*c.Old))
	case c.Old.Kind != c.New.Kind:
		return fmt.Sprintf("field %s %s -> %s (%s -> %s)", c.Key, c.Old.Kind, c.New.Kind, opValue(*c.Old), opValue(*c.New))
	}
	shown := func(f Field) string {
		if f.Kind == Recorded {
			return quote(f.Value)
		}
		return opValue(f)
	}
	return fmt.Sprintf("%s %s -> %s", c.Key, shown(*c.Old), shown(*c.New))
}

// opValue returns f as Format writes it, without its key: "==3".
func opValue(f Field) string { return f.Kind.Op() + quote(f.Value) }

// String renders d for a person as plain text without a trailing newline,
// the same bytes every time for the same d. Each change is one line that
// starts with the case's name ("name (#2)" for a second occurrence):
//
//	beta: verdict PASS -> FAIL
//	beta: status [OK balance=990] -> [OK balance=980]
//	delta: verdict PASS -> SKIP (why=[nethost: not root])
//	gamma: only in old run (FAIL)
//	epsilon: only in new run (PASS)
//
// A case in one run only is named with its verdict, not printed whole:
// its fields are compared with nothing.
func (d Difference) String() string {
	name := d.Name
	if d.Occurrence > 1 {
		name = fmt.Sprintf("%s (#%d)", d.Name, d.Occurrence)
	}
	switch {
	case d.Missing() && d.Added():
		return name + ": absent from both runs"
	case d.Missing():
		return fmt.Sprintf("%s: only in old run (%s)", name, d.Old.Verdict)
	case d.Added():
		return fmt.Sprintf("%s: only in new run (%s)", name, d.New.Verdict)
	}
	var b strings.Builder
	if d.VerdictChanged() {
		fmt.Fprintf(&b, "%s: verdict %s -> %s\n", name, verdictWhy(*d.Old, d.skipChanged()), verdictWhy(*d.New, d.skipChanged()))
	}
	for _, c := range d.Fields {
		fmt.Fprintf(&b, "%s: %s\n", name, c)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// verdictWhy returns l's verdict, followed by its why field when withWhy
// and it has one: "SKIP (why=[no root])".
func verdictWhy(l Line, withWhy bool) string {
	if why := l.Why(); withWhy && why != "" {
		return fmt.Sprintf("%s (%s=%s)", l.Verdict, WhyKey, quote(why))
	}
	return l.Verdict.String()
}
