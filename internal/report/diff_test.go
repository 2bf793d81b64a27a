package report

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// baseline is a run of three cases with stable and volatile fields.
func baseline() []Line {
	return []Line{
		{Name: "alpha", Pass: true, Fields: []Field{{Key: "calls", Value: "100"}, {Key: "elapsed", Value: "12ms", Volatile: true}}},
		{Name: "beta", Pass: true, Fields: []Field{{Key: "status", Value: "OK"}, {Key: "chunks", Value: "7", Volatile: true}}},
		{Name: "gamma", Pass: false, Fields: []Field{{Key: "why", Value: "known failure"}}},
	}
}

// summary is what a test checks about one Difference.
type summary struct {
	Name                   string
	Occurrence             int
	Missing, Added, Flip   bool
	StableDiffers          bool
	StringHas, StringLacks []string
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(old, new []Line) ([]Line, []Line)
		want   []summary
		detail func(t *testing.T, d []Difference)
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
			name: "field volatile in one side only",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[1].Fields[0] = Field{Key: "status", Value: "OTHER", Volatile: true}
				return o, n
			},
		},
		{
			name: "volatile field added",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[2].Fields = append(n[2].Fields, Field{Key: "t", Value: "1ms", Volatile: true})
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
			want: []summary{{Name: "alpha", Occurrence: 1, StableDiffers: true,
				StringHas:   []string{"alpha: stable fields differ (-old +new):", `"100"`, `"99"`, "volatile, not compared: elapsed 12ms -> 15ms"},
				StringLacks: []string{"PASS -> "}}},
		},
		{
			name: "flipped verdict",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[1].Pass = false
				return o, n
			},
			want: []summary{{Name: "beta", Occurrence: 1, Flip: true,
				StringHas: []string{"beta: PASS -> FAIL"}, StringLacks: []string{"stable fields differ"}}},
		},
		{
			name: "flipped verdict with a reason",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[1].Pass = false
				n[1].Fields = append(n[1].Fields, Field{Key: "why", Value: "broke"})
				return o, n
			},
			want: []summary{{Name: "beta", Occurrence: 1, Flip: true, StableDiffers: true,
				StringHas: []string{"beta: PASS -> FAIL; stable fields differ", `"why":`, `"broke"`}}},
		},
		{
			name: "stable field removed",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[2].Fields = nil
				return o, n
			},
			want: []summary{{Name: "gamma", Occurrence: 1, StableDiffers: true, StringHas: []string{`"why"`}}},
		},
		{
			name: "missing case",
			edit: func(o, n []Line) ([]Line, []Line) { return o, n[:2] },
			want: []summary{{Name: "gamma", Occurrence: 1, Missing: true,
				StringHas: []string{"gamma: missing from new run", "old: CASE gamma FAIL why=[known failure]"}}},
		},
		{
			name: "added case",
			edit: func(o, n []Line) ([]Line, []Line) { return o, append(n, Line{Name: "delta", Pass: true}) },
			want: []summary{{Name: "delta", Occurrence: 1, Added: true,
				StringHas: []string{"delta: only in new run", "new: CASE delta PASS"}}},
		},
		{
			name: "case run twice in new",
			edit: func(o, n []Line) ([]Line, []Line) { return o, append(n, n[0]) },
			want: []summary{{Name: "alpha", Occurrence: 2, Added: true, StringHas: []string{"alpha (#2): only in new run"}}},
		},
		{
			name: "repeated key",
			edit: func(o, n []Line) ([]Line, []Line) {
				o[2].Fields = append(o[2].Fields, Field{Key: "why", Value: "second"})
				n[2].Fields = append(n[2].Fields, Field{Key: "why", Value: "other"})
				return o, n
			},
			want: []summary{{Name: "gamma", Occurrence: 1, StableDiffers: true, StringHas: []string{`"why#2"`}}},
		},
		{
			name: "everything at once",
			edit: func(o, n []Line) ([]Line, []Line) {
				n[0].Fields[0].Value = "101"
				n[1].Pass = false
				return o, []Line{n[1], n[0], {Name: "delta", Pass: true}}
			},
			want: []summary{
				{Name: "alpha", Occurrence: 1, StableDiffers: true},
				{Name: "beta", Occurrence: 1, Flip: true},
				{Name: "gamma", Occurrence: 1, Missing: true},
				{Name: "delta", Occurrence: 1, Added: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, new := tt.edit(baseline(), baseline())
			diffs := Diff(old, new)
			got := make([]summary, len(diffs))
			for i, d := range diffs {
				got[i] = summary{Name: d.Name, Occurrence: d.Occurrence, Missing: d.Missing(), Added: d.Added(),
					Flip: d.VerdictChanged(), StableDiffers: d.Stable != ""}
			}
			want := make([]summary, len(tt.want))
			for i, w := range tt.want {
				want[i] = w
				want[i].StringHas, want[i].StringLacks = nil, nil
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("Diff mismatch (-want +got):\n%s", diff)
			}
			for i, w := range tt.want {
				s := diffs[i].String()
				// cmp.Diff randomly uses non-breaking spaces; compare text only.
				norm := strings.ReplaceAll(s, "\u00a0", " ")
				for _, sub := range w.StringHas {
					if !strings.Contains(norm, sub) {
						t.Errorf("String() =\n%s\nwant it to contain %q", s, sub)
					}
				}
				for _, sub := range w.StringLacks {
					if strings.Contains(norm, sub) {
						t.Errorf("String() =\n%s\nwant it not to contain %q", s, sub)
					}
				}
			}
		})
	}
}

func TestDiffDoesNotModifyInput(t *testing.T) {
	old, new := baseline(), baseline()
	new[0].Fields[0].Value = "1"
	Diff(old, new)
	if diff := cmp.Diff(baseline(), old); diff != "" {
		t.Errorf("Diff modified old (-want +got):\n%s", diff)
	}
}
