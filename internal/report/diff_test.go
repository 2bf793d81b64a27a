package report

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// baseline is a run of three cases with stable and volatile fields.
func baseline() []Line {
	return []Line{
		{Name: "alpha", Verdict: Pass, Fields: []Field{{Key: "calls", Value: "100"}, {Key: "elapsed", Value: "12ms", Kind: Volatile}}},
		{Name: "beta", Verdict: Pass, Fields: []Field{{Key: "status", Value: "OK"}, {Key: "chunks", Value: "7", Kind: Volatile}}},
		{Name: "gamma", Verdict: Fail, Fields: []Field{{Key: "why", Value: "known failure"}}},
	}
}

// TestDiff edits a copy of baseline and checks each Difference's text,
// which is plain and byte-stable, so it is compared whole.
func TestDiff(t *testing.T) {
	tests := []struct {
		name string
		edit func(old, new []Line) ([]Line, []Line)
		want []string // String() of each Difference
	}{
		{
			name: "identical runs",
			edit: func(o, n []Line) ([]Line, []Line) { return o, n },
		},
		{
			name: "volatile values changed",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[0].Fields[1].Value = "9000ms"
				n[1].Fields[1].Value = "1"
				return o, n
			},
		},
		{
			name: "order changed",
			edit: func(o, n []Line) ([]Line, []Line) { return o, []Line{n[2], n[0], n[1]} },
		},
		{
			name: "volatile field added",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[2].Fields = append(n[2].Fields, Field{Key: "t", Value: "1ms", Kind: Volatile})
				return o, n
			},
		},
		{
			name: "volatile field removed",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[0].Fields = n[0].Fields[:1]
				return o, n
			},
		},
		{
			name: "tampered stable value",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[0].Fields[0].Value = "99"
				n[0].Fields[1].Value = "15ms"
				return o, n
			},
			want: []string{"alpha: calls 100 -> 99"},
		},
		{
			// Volatile values, changed or not, are noise beside a stable
			// change: only the stable change is printed.
			name: "volatile fields beside a stable change",
			edit: func(o, n []Line) ([]Line, []Line) {
				o[1].Fields = append(o[1].Fields, Field{Key: "elapsed", Value: "3ms", Kind: Volatile})
				n[1].Fields = append(n[1].Fields, Field{Key: "elapsed", Value: "4ms", Kind: Volatile})
				n[1].Fields[0].Value = "DEGRADED"
				return o, n
			},
			want: []string{"beta: status OK -> DEGRADED"},
		},
		{
			// The case: serverDebitExec=200 -> serverDebitExec~=999
			// was no difference.
			name: "stable field turned volatile",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[1].Fields[0] = Field{Key: "status", Value: "OTHER", Kind: Volatile}
				return o, n
			},
			want: []string{"beta: field status recorded -> volatile (=OK -> ~=OTHER)"},
		},
		{
			name: "stable field turned volatile, same value",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[1].Fields[0].Kind = Volatile
				return o, n
			},
			want: []string{"beta: field status recorded -> volatile (=OK -> ~=OK)"},
		},
		{
			name: "volatile field turned asserted",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[0].Fields[1].Kind = Asserted
				return o, n
			},
			want: []string{"alpha: field elapsed volatile -> asserted (~=12ms -> ==12ms)"},
		},
		{
			name: "recorded field turned asserted",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[0].Fields[0].Kind = Asserted
				return o, n
			},
			want: []string{"alpha: field calls recorded -> asserted (=100 -> ==100)"},
		},
		{
			name: "asserted field turned recorded",
			edit: func(o, n []Line) ([]Line, []Line) {
				o[2].Fields[0].Kind = Asserted
				return o, n
			},
			want: []string{"gamma: field why asserted -> recorded (==[known failure] -> =[known failure])"},
		},
		{
			name: "asserted value changed",
			edit: func(o, n []Line) ([]Line, []Line) {
				o[0].Fields[0].Kind = Asserted
				n[0].Fields[0] = Field{Key: "calls", Value: "99", Kind: Asserted}
				return o, n
			},
			want: []string{"alpha: calls ==100 -> ==99"},
		},
		{
			name: "bound appeared beside its volatile measurement",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[0].Fields = append(n[0].Fields, Field{Key: "elapsed", Value: "100ms", Kind: Bound})
				return o, n
			},
			want: []string{"alpha: field elapsed appeared (<=100ms)"},
		},
		{
			name: "bound loosened",
			edit: func(o, n []Line) ([]Line, []Line) {
				o[0].Fields = append(o[0].Fields, Field{Key: "elapsed", Value: "100ms", Kind: Bound})
				n[0].Fields = append(n[0].Fields, Field{Key: "elapsed", Value: "300ms", Kind: Bound})
				n[0].Fields[1].Value = "250ms"
				return o, n
			},
			want: []string{"alpha: elapsed <=100ms -> <=300ms"},
		},
		{
			name: "bound and measurement swap places",
			edit: func(o, n []Line) ([]Line, []Line) {
				o[0].Fields = append(o[0].Fields, Field{Key: "elapsed", Value: "100ms", Kind: Bound})
				n[0].Fields = []Field{n[0].Fields[0], {Key: "elapsed", Value: "100ms", Kind: Bound}, n[0].Fields[1]}
				return o, n
			},
		},
		{
			name: "flipped verdict",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[1].Verdict = Fail
				return o, n
			},
			want: []string{"beta: verdict PASS -> FAIL"},
		},
		{
			name: "interrupted",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[2].Verdict = Interrupted
				return o, n
			},
			want: []string{"gamma: verdict FAIL -> INTERRUPTED"},
		},
		{
			// A scenario that did not run proved nothing: never equal to
			// one that passed, even with the same fields.
			name: "passed, then skipped",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[1].Verdict = Skipped
				return o, n
			},
			want: []string{"beta: verdict PASS -> SKIP"},
		},
		{
			// A skipped case ran nothing: its fields are not compared
			// with those of a run, and the reason it gives is shown.
			name: "passed, then skipped with a reason",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[1] = Skip("beta", "nethost: not root")
				return o, n
			},
			want: []string{"beta: verdict PASS -> SKIP (why=[nethost: not root])"},
		},
		{
			name: "failed, then skipped",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[2] = Skip("gamma", "no root")
				return o, n
			},
			want: []string{"gamma: verdict FAIL (why=[known failure]) -> SKIP (why=[no root])"},
		},
		{
			name: "skipped for another reason",
			edit: func(o, n []Line) ([]Line, []Line) {
				o[0] = Skip("alpha", "no root")
				n[0] = Skip("alpha", "no PostgreSQL")
				return o, n
			},
			want: []string{"alpha: why [no root] -> [no PostgreSQL]"},
		},
		{
			name: "skipped, then passed",
			edit: func(o, n []Line) ([]Line, []Line) {
				o[0] = Skip("alpha", "nethost: test hosts unavailable")
				return o, n
			},
			want: []string{"alpha: verdict SKIP (why=[nethost: test hosts unavailable]) -> PASS"},
		},
		{
			name: "skipped in both, same reason",
			edit: func(o, n []Line) ([]Line, []Line) {
				o[0] = Skip("alpha", "no root")
				n[0] = Skip("alpha", "no root")
				return o, n
			},
		},
		{
			name: "flipped verdict with a reason",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[1].Verdict = Fail
				n[1].Fields = append(n[1].Fields, Field{Key: "why", Value: "broke down"})
				return o, n
			},
			want: []string{"beta: verdict PASS -> FAIL\nbeta: field why appeared (=[broke down])"},
		},
		{
			name: "stable field removed",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[2].Fields = nil
				return o, n
			},
			want: []string{"gamma: field why disappeared (was =[known failure])"},
		},
		{
			name: "missing case",
			edit: func(o, n []Line) ([]Line, []Line) { return o, n[:2] },
			want: []string{"gamma: only in old run (FAIL)"},
		},
		{
			name: "added case",
			edit: func(o, n []Line) ([]Line, []Line) { return o, append(n, Line{Name: "delta", Verdict: Pass}) },
			want: []string{"delta: only in new run (PASS)"},
		},
		{
			name: "case run twice in new",
			edit: func(o, n []Line) ([]Line, []Line) { return o, append(n, n[0]) },
			want: []string{"alpha (#2): only in new run (PASS)"},
		},
		{
			name: "repeated key",
			edit: func(o, n []Line) ([]Line, []Line) {
				o[2].Fields = append(o[2].Fields, Field{Key: "why", Value: "second"})
				n[2].Fields = append(n[2].Fields, Field{Key: "why", Value: "other"})
				return o, n
			},
			want: []string{"gamma: why#2 second -> other"},
		},
		{
			name: "everything at once",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[0].Fields[0].Value = "101"
				n[1].Verdict = Fail
				return o, []Line{n[1], n[0], {Name: "delta", Verdict: Pass}}
			},
			want: []string{
				"alpha: calls 100 -> 101",
				"beta: verdict PASS -> FAIL",
				"gamma: only in old run (FAIL)",
				"delta: only in new run (PASS)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, new := tt.edit(baseline(), baseline())
			var got []string
			for _, d := range Diff(old, new) {
				got = append(got, d.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Diff mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDiffStructure checks what Diff returns besides its text.
func TestDiffStructure(t *testing.T) {
	old, new := baseline(), baseline()
	new[0].Fields[0].Value = "99"
	new[1].Fields[0].Kind = Volatile
	new[1].Verdict = Interrupted
	new = append(new[:2], Line{Name: "delta"}, Skip("epsilon", "no root"))
	old = append(old, Line{Name: "epsilon", Verdict: Pass, Fields: []Field{{Key: "calls", Value: "3"}}})
	want := []Difference{
		{Name: "alpha", Occurrence: 1, Old: &old[0], New: &new[0], Fields: []FieldChange{
			{Key: "calls", Old: &Field{Key: "calls", Value: "100"}, New: &Field{Key: "calls", Value: "99"}}}},
		{Name: "beta", Occurrence: 1, Old: &old[1], New: &new[1], Fields: []FieldChange{
			{Key: "status", Old: &Field{Key: "status", Value: "OK"}, New: &Field{Key: "status", Value: "OK", Kind: Volatile}}}},
		{Name: "gamma", Occurrence: 1, Old: &old[2]},
		// Skipped: no fields compared.
		{Name: "epsilon", Occurrence: 1, Old: &old[3], New: &new[3]},
		{Name: "delta", Occurrence: 1, New: &new[2]},
	}
	got := Diff(old, new)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Diff mismatch (-want +got):\n%s", diff)
	}
	for i, w := range []struct{ missing, added, verdict bool }{
		{false, false, false}, {false, false, true}, {true, false, false}, {false, false, true}, {false, true, false},
	} {
		d := got[i]
		if d.Missing() != w.missing || d.Added() != w.added || d.VerdictChanged() != w.verdict {
			t.Errorf("%s: Missing, Added, VerdictChanged = %v, %v, %v; want %v, %v, %v",
				d.Name, d.Missing(), d.Added(), d.VerdictChanged(), w.missing, w.added, w.verdict)
		}
	}
}

// TestDiffStringStable: the text depends only on the inputs. go-cmp's own
// report text varies between processes on purpose, so none of it may
// reach String; this checks for its marks, and that two diffs of the same
// runs print the same bytes.
func TestDiffStringStable(t *testing.T) {
	old, new := baseline(), baseline()
	new[0].Fields[0].Value = "99"
	new[1].Fields = append(new[1].Fields, Field{Key: "why", Value: "map[x:1] {y} \"z\""})
	new[2].Fields[0].Kind = Asserted
	render := func() string {
		var b strings.Builder
		for _, d := range Diff(old, new) {
			b.WriteString(d.String() + "\n")
		}
		return b.String()
	}
	first := render()
	if second := render(); second != first {
		t.Errorf("second diff of the same runs differs:\n%q\n%q", first, second)
	}
	for _, mark := range []string{"\u00a0", "(-old +new)", "map[string]string"} {
		if strings.Contains(first, mark) {
			t.Errorf("diff text holds go-cmp's %q:\n%s", mark, first)
		}
	}
}

func TestDiffDoesNotModifyInput(t *testing.T) {
	old, new := baseline(), baseline()
	new[0].Fields[0].Value = "1"
	new[1].Fields[0].Kind = Volatile
	Diff(old, new)
	if diff := cmp.Diff(baseline(), old); diff != "" {
		t.Errorf("Diff modified old (-want +got):\n%s", diff)
	}
}

func TestFieldChangeString(t *testing.T) {
	f := func(k Kind, v string) *Field { return &Field{Key: "k", Value: v, Kind: k} }
	tests := []struct {
		c    FieldChange
		want string
	}{
		{FieldChange{Key: "k", Old: f(Recorded, "1"), New: f(Recorded, "2")}, "k 1 -> 2"},
		{FieldChange{Key: "k", Old: f(Recorded, "a b"), New: f(Recorded, "")}, "k [a b] -> []"},
		{FieldChange{Key: "k", Old: f(Asserted, "1"), New: f(Asserted, "2")}, "k ==1 -> ==2"},
		{FieldChange{Key: "k", Old: f(Bound, "1"), New: f(Bound, "2")}, "k <=1 -> <=2"},
		{FieldChange{Key: "k", New: f(Asserted, "3")}, "field k appeared (==3)"},
		{FieldChange{Key: "k", Old: f(Bound, "3")}, "field k disappeared (was <=3)"},
		{FieldChange{Key: "k", Old: f(Recorded, "200"), New: f(Volatile, "999")}, "field k recorded -> volatile (=200 -> ~=999)"},
		{FieldChange{Key: "k"}, "field k absent from both runs"},
	}
	for _, tt := range tests {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}
