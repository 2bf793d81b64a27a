package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseColorMode(t *testing.T) {
	for i, name := range ColorModes {
		m, err := ParseColorMode(name)
		if err != nil || m != ColorMode(i) || m.String() != name {
			t.Errorf("ParseColorMode(%q) = %v, %v; want %s", name, m, err, name)
		}
	}
	if _, err := ParseColorMode("sometimes"); err == nil || !strings.Contains(err.Error(), "auto, always, never") {
		t.Errorf("ParseColorMode(sometimes) error = %v, want one listing the modes", err)
	}
	if got, want := ColorMode(7).String(), "UNKNOWN_COLOR_MODE_7"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestPrinter(t *testing.T) {
	const esc = "\x1b["
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	pass := Line{Name: "a", Verdict: Pass, Fields: []Field{{Key: "why", Value: "PASS FAIL"}}}
	fail := Line{Name: "b", Verdict: Fail}
	interrupted := Line{Name: "c", Verdict: Interrupted, Fields: []Field{{Key: "t", Value: "1ms", Kind: Volatile}}}
	unknown := Line{Name: "d", Verdict: Verdict(42)}
	skipped := Skip("e", "no root")
	tests := []struct {
		name    string
		out     interface{ Write([]byte) (int, error) }
		mode    ColorMode
		noColor string
		colour  bool
	}{
		{"auto, buffer is not a terminal", &strings.Builder{}, ColorAuto, "", false},
		{"auto, regular file is not a terminal", file, ColorAuto, "", false},
		{"never", &strings.Builder{}, ColorNever, "", false},
		{"always, even to a buffer", &strings.Builder{}, ColorAlways, "", true},
		{"always beats NO_COLOR", &strings.Builder{}, ColorAlways, "1", true},
		{"auto with NO_COLOR", file, ColorAuto, "1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("NO_COLOR", tt.noColor)
			if got := UseColor(tt.out, tt.mode); got != tt.colour {
				t.Errorf("UseColor = %v, want %v", got, tt.colour)
			}
			var b strings.Builder
			p := NewPrinter(&b, tt.mode)
			if tt.mode == ColorAuto {
				// Decide from the real writer, print to a buffer we can read.
				p = NewPrinter(tt.out, tt.mode)
				p.w = &b
			}
			if err := p.Print(pass); err != nil {
				t.Fatal(err)
			}
			for _, l := range []Line{fail, interrupted, unknown, skipped} {
				if err := p.Print(l); err != nil {
					t.Fatal(err)
				}
			}
			got := b.String()
			if !tt.colour {
				want := Format(pass) + "\n" + Format(fail) + "\n" + Format(interrupted) + "\n" + Format(unknown) + "\n" + Format(skipped) + "\n"
				if got != want {
					t.Errorf("printed %q, want %q", got, want)
				}
				return
			}
			want := "CASE a " + esc + "32mPASS" + esc + "0m why=[PASS FAIL]\n" +
				"CASE b " + esc + "31mFAIL" + esc + "0m\n" +
				"CASE c " + esc + "33mINTERRUPTED" + esc + "0m t~=1ms\n" +
				"CASE d UNKNOWN_VERDICT_42\n" +
				"CASE e " + esc + "33;2mSKIP" + esc + "0;22m why=[no root]\n"
			if got != want {
				t.Errorf("printed %q, want %q", got, want)
			}
		})
	}
}

// TestVerdictPainter: CHECK and CHAOS verdicts are coloured as Printer
// colours CASE verdicts, UNKNOWN yellow as INTERRUPTED is; an unknown
// value never is.
func TestVerdictPainter(t *testing.T) {
	const esc = "\x1b["
	tests := []struct {
		v            Verdict
		always, none string
	}{
		{Pass, esc + "32mPASS" + esc + "0m", "PASS"},
		{Fail, esc + "31mFAIL" + esc + "0m", "FAIL"},
		{Interrupted, esc + "33mINTERRUPTED" + esc + "0m", "INTERRUPTED"},
		{Skipped, esc + "33;2mSKIP" + esc + "0;22m", "SKIP"},
		{Unknown, esc + "33mUNKNOWN" + esc + "0m", "UNKNOWN"},
		{Verdict(9), "UNKNOWN_VERDICT_9", "UNKNOWN_VERDICT_9"},
	}
	always := VerdictPainter(&strings.Builder{}, ColorAlways)
	never := VerdictPainter(&strings.Builder{}, ColorNever)
	for _, tt := range tests {
		t.Run(tt.v.String(), func(t *testing.T) {
			if got := always(tt.v); got != tt.always {
				t.Errorf("always: got %q, want %q", got, tt.always)
			}
			if got := never(tt.v); got != tt.none {
				t.Errorf("never: got %q, want %q", got, tt.none)
			}
		})
	}
}
