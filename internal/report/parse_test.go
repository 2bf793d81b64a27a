package report

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		value string
		want  string // how the value is written after "k="
	}{
		{"42", "42"},
		{"a]b", "a]b"},
		{"x[0]", "x[0]"},
		{"", "[]"},
		{"two words", "[two words]"},
		{"[1 2]", "[[1 2]]"},
		{"[x]", "[[x]]"},
		{"tab\there", "[tab\there]"},
		{"line\nbreak", "[line break]"},
		{`"quoted"`, `["quoted"]`},
		{"a ] b", `"a ] b"`},
		{"[", `"["`},
		{"cr\r", `"cr\r"`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := Format(Line{Name: "c", Pass: true, Fields: []Field{{Key: "k", Value: tt.value}}})
			if want := "CASE c PASS k=" + tt.want; got != want {
				t.Errorf("Format(value %q) = %q, want %q", tt.value, got, want)
			}
		})
	}
}

// trickyValues are values whose end is hard to find.
var trickyValues = []string{
	"",
	"plain",
	"with space",
	"  leading and trailing  ",
	"[starts with bracket",
	"ends with bracket]",
	"[balanced [nested] ok]",
	"[]",
	"[[[]]]",
	"] leading close [",
	"a ] b",
	"key=value inside",
	"x~=y",
	`"starts with quote`,
	`has "quotes" inside`,
	`back\slash \[ \]`,
	"tab\tinside",
	"ctrl\x01char",
	"cr\rinside",
	"ünïcödé ✓",
	"\xff invalid utf8",
	"CASE other PASS k=v",
	"=",
	"~",
}

func TestFormatParseRoundTrip(t *testing.T) {
	for _, v := range trickyValues {
		t.Run(v, func(t *testing.T) {
			want := Line{Name: "tricky_case", Pass: false, Fields: []Field{
				{Key: "before", Value: "1"},
				{Key: "v", Value: v},
				{Key: "vol", Value: v, Volatile: true},
				{Key: "after", Value: "[2]"},
			}}
			got, err := Parse(Format(want))
			if err != nil {
				t.Fatalf("Parse(%q): %v", Format(want), err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Parse(Format(l)) mismatch for %q (-want +got):\n%s", Format(want), diff)
			}
		})
	}
}

func TestFormatParseNewlinesBecomeSpaces(t *testing.T) {
	in := Line{Name: "c", Fields: []Field{{Key: "why", Value: "panic: boom\ngoroutine 1 [running]:\n\tmain.go:3"}}}
	want := Line{Name: "c", Fields: []Field{{Key: "why", Value: "panic: boom goroutine 1 [running]: \tmain.go:3"}}}
	got, err := Parse(Format(in))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func FuzzFormatParse(f *testing.F) {
	for _, v := range trickyValues {
		f.Add(v, true)
	}
	f.Fuzz(func(t *testing.T, v string, volatile bool) {
		in := Line{Name: "fuzz", Pass: true, Fields: []Field{{Key: "k", Value: v, Volatile: volatile}, {Key: "z", Value: "end"}}}
		want := Line{Name: "fuzz", Pass: true, Fields: []Field{{Key: "k", Value: strings.ReplaceAll(v, "\n", " "), Volatile: volatile}, {Key: "z", Value: "end"}}}
		got, err := Parse(Format(in))
		if err != nil {
			t.Fatalf("Parse(%q): %v", Format(in), err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Parse(Format(l)) mismatch for %q (-want +got):\n%s", Format(in), diff)
		}
	})
}

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Line
	}{
		{"CASE a PASS", Line{Name: "a", Pass: true}},
		{"CASE a FAIL", Line{Name: "a"}},
		{"CASE a PASS  x=1   y~=2 ", Line{Name: "a", Pass: true, Fields: []Field{{Key: "x", Value: "1"}, {Key: "y", Value: "2", Volatile: true}}}},
		{"CASE a PASS x= y=", Line{Name: "a", Pass: true, Fields: []Field{{Key: "x"}, {Key: "y"}}}},
		{"CASE a PASS k=v=w", Line{Name: "a", Pass: true, Fields: []Field{{Key: "k", Value: "v=w"}}}},
		{"CASE a FAIL why=[value with spaces [nested] ok] n=3", Line{Name: "a", Fields: []Field{
			{Key: "why", Value: "value with spaces [nested] ok"}, {Key: "n", Value: "3"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in      string
		wantMsg string
	}{
		{"", `want a line starting with "CASE "`},
		{"CASE", `want a line starting with "CASE "`},
		{"CASE ", "missing case name"},
		{"CASE a", `verdict "", want PASS or FAIL`},
		{"CASE a pass", `verdict "pass", want PASS or FAIL`},
		{"CASE a PASS novalue", `field "novalue" has no '='`},
		{"CASE a PASS a b=1", `field "a" has no '='`},
		{"CASE a PASS =1", "empty key"},
		{"CASE a PASS ~=1", "empty key"},
		{"CASE a PASS k=[open", `no ']' matches`},
		{"CASE a PASS k=[a]b", `want a space after the value of "k"`},
		{`CASE a PASS k="open`, "bad quoted string"},
		{`CASE a PASS k="a"b`, `want a space after the value of "k"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := Parse(tt.in)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error = %v, want a *SyntaxError", tt.in, err)
			}
			if !strings.Contains(se.Msg, tt.wantMsg) {
				t.Errorf("Parse(%q) error = %q, want it to contain %q", tt.in, se.Msg, tt.wantMsg)
			}
		})
	}
}

func TestReadOutput(t *testing.T) {
	in := "CASE a PASS n=1\r\n" +
		"\n" +
		"some stray text\n" +
		"CASE b FAIL why=[it [broke]]\n" +
		"1 passed, 1 failed\n" +
		"CASE c PASS" // no final newline
	want := []Line{
		{Name: "a", Pass: true, Fields: []Field{{Key: "n", Value: "1"}}},
		{Name: "b", Fields: []Field{{Key: "why", Value: "it [broke]"}}},
		{Name: "c", Pass: true},
	}
	got, err := ReadOutput(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadOutput mismatch (-want +got):\n%s", diff)
	}
}

func TestReadOutputMalformedLineNumber(t *testing.T) {
	in := "CASE a PASS\n\nCASE b PASS why=[unterminated\n"
	_, err := ReadOutput(strings.NewReader(in))
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("ReadOutput error = %v, want a *SyntaxError", err)
	}
	if se.LineNo != 3 {
		t.Errorf("LineNo = %d, want 3", se.LineNo)
	}
	if !strings.Contains(err.Error(), "line 3") {
		t.Errorf("error %q does not name line 3", err)
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		lines []Line
		want  string
	}{
		{nil, "0 passed, 0 failed"},
		{[]Line{{Pass: true}, {Pass: true}, {Pass: false}}, "2 passed, 1 failed"},
	}
	for _, tt := range tests {
		if got := Summary(tt.lines); got != tt.want {
			t.Errorf("Summary = %q, want %q", got, tt.want)
		}
	}
}
