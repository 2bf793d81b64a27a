package report

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/outcome"
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
		{"=", "[=]"},
		{"=x", "[=x]"},
		{"x=", "x="},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := Format(Line{Name: "c", Verdict: Pass, Fields: []Field{{Key: "k", Value: tt.value}}})
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
	"==",
	"=x",
	"<=",
	"~",
}

func TestFormatKinds(t *testing.T) {
	l := Line{Name: "c", Verdict: Interrupted, Fields: []Field{
		{Key: "n", Value: "1", Kind: Recorded},
		{Key: "ok", Value: "true", Kind: Asserted},
		{Key: "t", Value: "100ms", Kind: Bound},
		{Key: "t", Value: "20ms", Kind: LowerBound},
		{Key: "t", Value: "23ms", Kind: Volatile},
	}}
	if got, want := Format(l), "CASE c INTERRUPTED n=1 ok==true t<=100ms t>=20ms t~=23ms"; got != want {
		t.Errorf("Format = %q, want %q", got, want)
	}
}

// TestFormatUnknownKind: a field of no known kind is written so that
// Parse refuses it, rather than read back as another kind.
func TestFormatUnknownKind(t *testing.T) {
	s := Format(Line{Name: "c", Fields: []Field{{Key: "k", Value: "1", Kind: Kind(7)}}})
	if _, err := Parse(s); err == nil {
		t.Errorf("Parse(%q) succeeded, want an error", s)
	}
}

func TestKindVerdictString(t *testing.T) {
	tests := []struct {
		got  fmt.Stringer
		want string
	}{
		{Recorded, "recorded"},
		{Asserted, "asserted"},
		{Bound, "bound"},
		{Volatile, "volatile"},
		{Kind(7), "UNKNOWN_KIND_7"},
		{Kind(-1), "UNKNOWN_KIND_-1"},
		{Pass, "PASS"},
		{Fail, "FAIL"},
		{Interrupted, "INTERRUPTED"},
		{Skipped, "SKIP"},
		{Unknown, "UNKNOWN"},
		{Error, "ERROR"},
		{Finding, "FINDING"},
		{NotApplicable, "N/A"},
		{Verdict(42), "UNKNOWN_VERDICT_42"},
		{Verdict(-1), "UNKNOWN_VERDICT_-1"},
	}
	for _, tt := range tests {
		if got := tt.got.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
	if got := (Line{}).Verdict; got != Fail {
		t.Errorf("zero Verdict = %v, want FAIL", got)
	}
	if PassIf(true) != Pass || PassIf(false) != Fail {
		t.Errorf("PassIf(true), PassIf(false) = %v, %v; want PASS, FAIL", PassIf(true), PassIf(false))
	}
}

func TestFormatParseRoundTrip(t *testing.T) {
	for _, v := range trickyValues {
		t.Run(v, func(t *testing.T) {
			want := Line{Name: "tricky_case", Verdict: Fail, Fields: []Field{
				{Key: "before", Value: "1"},
				{Key: "v", Value: v},
				{Key: "asserted", Value: v, Kind: Asserted},
				{Key: "bound", Value: v, Kind: Bound},
				{Key: "floor", Value: v, Kind: LowerBound},
				{Key: "vol", Value: v, Kind: Volatile},
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

// outcomes are the values an Outcome field may hold.
var outcomes = []outcome.Outcome{outcome.Holds, outcome.Violated, outcome.Unsupported, outcome.Sometimes}

// caseVerdicts are the verdicts a CASE line may carry.
var caseVerdicts = func() []Verdict {
	var out []Verdict
	for v, row := range verdicts {
		if row.onCase {
			out = append(out, Verdict(v))
		}
	}
	return out
}()

func FuzzFormatParse(f *testing.F) {
	for i, v := range trickyValues {
		f.Add(v, uint8(i))
	}
	f.Fuzz(func(t *testing.T, v string, kv uint8) {
		kind := Kind(kv % uint8(len(kinds)))
		verdict := caseVerdicts[int(kv)%len(caseVerdicts)]
		if kind == Outcome {
			// Parse refuses an Outcome field whose value names no
			// outcome (TestParseErrors): the value is one of them.
			v = outcomes[int(kv)%len(outcomes)].String()
		}
		in := Line{Name: "fuzz", Verdict: verdict, Fields: []Field{{Key: "k", Value: v, Kind: kind}, {Key: "z", Value: "end"}}}
		want := Line{Name: "fuzz", Verdict: verdict, Fields: []Field{{Key: "k", Value: strings.ReplaceAll(v, "\n", " "), Kind: kind}, {Key: "z", Value: "end"}}}
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
		{"CASE a PASS", Line{Name: "a", Verdict: Pass}},
		{"CASE a FAIL", Line{Name: "a", Verdict: Fail}},
		{"CASE a INTERRUPTED", Line{Name: "a", Verdict: Interrupted}},
		{`CASE a SKIP why="nethost: no root (run as root, e.g. sudo -E)"`, Skip("a", "nethost: no root (run as root, e.g. sudo -E)")},
		{"CASE a SKIP why=[no root]", Skip("a", "no root")},
		{"CASE a PASS  x=1   y~=2 ", Line{Name: "a", Verdict: Pass, Fields: []Field{{Key: "x", Value: "1"}, {Key: "y", Value: "2", Kind: Volatile}}}},
		{"CASE a PASS x= y=", Line{Name: "a", Verdict: Pass, Fields: []Field{{Key: "x"}, {Key: "y"}}}},
		{"CASE a PASS x== y<= z~=", Line{Name: "a", Verdict: Pass, Fields: []Field{{Key: "x", Kind: Asserted}, {Key: "y", Kind: Bound}, {Key: "z", Kind: Volatile}}}},
		{"CASE a PASS k=v=w", Line{Name: "a", Verdict: Pass, Fields: []Field{{Key: "k", Value: "v=w"}}}},
		{"CASE a PASS k==v==w", Line{Name: "a", Verdict: Pass, Fields: []Field{{Key: "k", Value: "v==w", Kind: Asserted}}}},
		{"CASE a PASS t~=23ms t<=100ms n==[OK balance=990]", Line{Name: "a", Verdict: Pass, Fields: []Field{
			{Key: "t", Value: "23ms", Kind: Volatile}, {Key: "t", Value: "100ms", Kind: Bound}, {Key: "n", Value: "OK balance=990", Kind: Asserted}}}},
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
		{"CASE a", `verdict "", want PASS, FAIL, INTERRUPTED or SKIP`},
		{"CASE a pass", `verdict "pass", want PASS, FAIL, INTERRUPTED or SKIP`},
		{"CASE a SKIPPED", `verdict "SKIPPED", want PASS, FAIL, INTERRUPTED or SKIP`},
		{"CASE a skip", `verdict "skip"`},
		{"CASE a UNKNOWN_VERDICT_42", `verdict "UNKNOWN_VERDICT_42"`},
		// UNKNOWN is a verdict of CHECK and CHAOS lines, never of a CASE line.
		{"CASE a UNKNOWN", `verdict "UNKNOWN", want PASS, FAIL, INTERRUPTED or SKIP`},
		{"CASE a PASS novalue", `field "novalue" has no '='`},
		{"CASE a PASS a b=1", `field "a" has no '='`},
		{"CASE a PASS =1", "empty key"},
		{"CASE a PASS ~=1", "empty key"},
		{"CASE a PASS <=1", "empty key"},
		{"CASE a PASS ==1", "empty key"},
		{"CASE a PASS a~b=1", `key "a~b" holds '~', '<', '>' or ':'`},
		{"CASE a PASS a<b==1", `key "a<b" holds '~', '<', '>' or ':'`},
		{"CASE a PASS k~~=1", `key "k~" holds '~', '<', '>' or ':'`},
		{"CASE a PASS a>b==1", `key "a>b" holds '~', '<', '>' or ':'`},
		{"CASE a PASS a:b=1", `key "a:b" holds '~', '<', '>' or ':'`},
		{"CASE a PASS inv:=held", `invariant inv: outcome: unknown outcome "held"`},
		{"CASE a PASS inv:=", `invariant inv: outcome: unknown outcome ""`},
		{"CASE a PASS k===1", `value of "k" starts with '='`},
		{"CASE a PASS k~==1", `value of "k" starts with '='`},
		{"CASE a PASS k<==1", `value of "k" starts with '='`},
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
		{Name: "a", Verdict: Pass, Fields: []Field{{Key: "n", Value: "1"}}},
		{Name: "b", Fields: []Field{{Key: "why", Value: "it [broke]"}}},
		{Name: "c", Verdict: Pass},
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
		{[]Line{{Verdict: Pass}, {Verdict: Pass}, {Verdict: Fail}}, "2 passed, 1 failed"},
		{[]Line{{Verdict: Pass}, {Verdict: Interrupted}}, "1 passed, 0 failed, 1 interrupted"},
		{[]Line{{Verdict: Verdict(42)}}, "0 passed, 1 failed"},
		{[]Line{{Verdict: Pass}, {Verdict: Skipped}, {Verdict: Fail}}, "1 passed, 1 failed, 1 skipped"},
		{[]Line{{Verdict: Skipped}, {Verdict: Interrupted}, {Verdict: Skipped}}, "0 passed, 0 failed, 1 interrupted, 2 skipped"},
		{[]Line{{Verdict: Error}, {Verdict: Fail}, {Verdict: Error}, {Verdict: Skipped}}, "0 passed, 1 failed, 2 errors, 1 skipped"},
		// A finding is not a pass: the closing line never counts a
		// violation among the passed.
		{[]Line{{Verdict: Pass}, {Verdict: Finding}}, "1 passed, 0 failed, 1 finding"},
		{[]Line{{Verdict: Finding}, {Verdict: NotApplicable}, {Verdict: Finding}, {Verdict: Skipped}}, "0 passed, 0 failed, 1 skipped, 2 findings, 1 n/a"},
	}
	for _, tt := range tests {
		if got := Summary(tt.lines); got != tt.want {
			t.Errorf("Summary = %q, want %q", got, tt.want)
		}
		if got, ok := parseSummary(tt.want); !ok || got != Tally(tt.lines) {
			t.Errorf("parseSummary(%q) = %+v, %v; want %+v", tt.want, got, ok, Tally(tt.lines))
		}
	}
}

// TestTally: SKIP, like INTERRUPTED and ERROR, is counted apart from
// passed and failed; a verdict nobody knows counts as failed.
func TestTally(t *testing.T) {
	lines := []Line{{Verdict: Pass}, {Verdict: Fail}, {Verdict: Interrupted}, Skip("s", "why"), Skip("t", "why"), {Verdict: Verdict(9)}, {Verdict: Error},
		{Verdict: Finding}, {Verdict: NotApplicable}, {Verdict: Finding}}
	want := Totals{Passed: 1, Failed: 2, Errors: 1, Interrupted: 1, Skipped: 2, Findings: 2, NotApplicable: 1}
	if diff := cmp.Diff(want, Tally(lines)); diff != "" {
		t.Errorf("Tally mismatch (-want +got):\n%s", diff)
	}
}

// TestPassedFailed: a SKIP never counts as passed and never as failed.
func TestPassedFailed(t *testing.T) {
	tests := []struct {
		verdict            Verdict
		passed, wantFailed bool
	}{
		{Pass, true, false},
		{Fail, false, true},
		{Interrupted, false, false},
		{Skipped, false, false},
		{Error, false, true},
		{Finding, false, false},
		{NotApplicable, false, false},
		{Verdict(42), false, true},
	}
	for _, tt := range tests {
		l := Line{Name: "c", Verdict: tt.verdict}
		if got := l.Passed(); got != tt.passed {
			t.Errorf("%v: Passed() = %v, want %v", tt.verdict, got, tt.passed)
		}
		if got := l.Failed(); got != tt.wantFailed {
			t.Errorf("%v: Failed() = %v, want %v", tt.verdict, got, tt.wantFailed)
		}
	}
}

// TestSkipRoundTrip: Skip's line carries its reason in why, and survives
// Format and Parse whatever the reason holds.
func TestSkipRoundTrip(t *testing.T) {
	for _, why := range append([]string{
		"nethost: test hosts unavailable: not running as root (network namespaces need root: run as root, e.g. sudo -E)",
		"pgcluster: PostgreSQL server binaries (initdb, postgres) not found; install them (Debian: apt-get install postgresql)",
	}, trickyValues...) {
		t.Run(why, func(t *testing.T) {
			want := Skip("half_open_peer_detected", strings.ReplaceAll(why, "\n", " "))
			if want.Verdict != Skipped || len(want.Fields) != 1 || want.Fields[0].Key != "why" {
				t.Fatalf("Skip = %+v, want a SKIP line with one why field", want)
			}
			s := Format(want)
			if !strings.HasPrefix(s, "CASE half_open_peer_detected SKIP why=") {
				t.Errorf("Format = %q, want it to start CASE half_open_peer_detected SKIP why=", s)
			}
			got, err := Parse(s)
			if err != nil {
				t.Fatalf("Parse(%q): %v", s, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Parse(Format(l)) mismatch for %q (-want +got):\n%s", s, diff)
			}
		})
	}
}

// TestReadOutputColor: a capture of --color always reads as the plain
// output.
func TestReadOutputColor(t *testing.T) {
	lines := []Line{
		{Name: "a", Verdict: Pass, Fields: []Field{{Key: "n", Value: "1", Kind: Asserted}}},
		{Name: "b", Verdict: Fail, Fields: []Field{{Key: "why", Value: "esc \x1b[31m inside"}}},
		{Name: "c", Verdict: Interrupted},
		Skip("d", "no root"),
	}
	var b strings.Builder
	p := NewPrinter(&b, ColorAlways)
	for _, l := range lines {
		if err := p.Print(l); err != nil {
			t.Fatal(err)
		}
	}
	b.WriteString("\x1b[1;32m1 passed\x1b[0m, 1 failed, 1 interrupted, 1 skipped\n")
	if !strings.Contains(b.String(), "\x1b[32mPASS") {
		t.Fatalf("the printer wrote no colour: %q", b.String())
	}
	got, err := ReadOutput(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(lines, got); diff != "" {
		t.Errorf("ReadOutput mismatch (-want +got):\n%s", diff)
	}
}

func TestStripSGR(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"\x1b[32mPASS\x1b[0m", "PASS"},
		{"\x1b[mx\x1b[1;31;40my", "xy"},
		{"\x1b[2Jkept", "\x1b[2Jkept"},
		{"end\x1b[", "end\x1b["},
		{"end\x1b[12", "end\x1b[12"},
	}
	for _, tt := range tests {
		if got := stripSGR(tt.in); got != tt.want {
			t.Errorf("stripSGR(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestReadOutputSummary: a summary line must count the CASE lines above
// it (since the previous summary line).
func TestReadOutputSummary(t *testing.T) {
	twenty := strings.Repeat("CASE a PASS\n", 20)
	tests := []struct {
		name    string
		in      string
		wantErr string // "" for none
	}{
		{"agrees", twenty + "20 passed, 0 failed\n", ""},
		{"absent", twenty, ""},
		{"zero interrupted spelled out", twenty + "20 passed, 0 failed, 0 interrupted\n", ""},
		{"with interrupted", "CASE a PASS\nCASE b INTERRUPTED\n1 passed, 0 failed, 1 interrupted\n", ""},
		{"with skipped", "CASE a PASS\nCASE b SKIP why=x\n1 passed, 0 failed, 1 skipped\n", ""},
		{"with interrupted and skipped", "CASE b SKIP why=x\nCASE c INTERRUPTED\n0 passed, 0 failed, 1 interrupted, 1 skipped\n", ""},
		{"zero skipped spelled out", twenty + "20 passed, 0 failed, 0 interrupted, 0 skipped\n", ""},
		{"skipped not counted", "CASE a PASS\nCASE b SKIP why=x\n1 passed, 0 failed\n", "line 3: summary line contradicts"},
		{"skipped counted as failed", "CASE a PASS\nCASE b SKIP why=x\n1 passed, 1 failed\n", "the 2 CASE lines above it tally 1 passed, 0 failed, 1 skipped"},
		{"skipped counted as passed", "CASE a PASS\nCASE b SKIP why=x\n2 passed, 0 failed\n", "line 3: summary line contradicts"},
		{"two runs concatenated", "CASE a PASS\n1 passed, 0 failed\nCASE a FAIL\n0 passed, 1 failed\n", ""},
		{"no cases", "0 passed, 0 failed\n", ""},
		{"contradicts", twenty + "0 passed, 20 failed\n", `line 21: summary line contradicts the CASE lines: "0 passed, 20 failed", but the 20 CASE lines above it tally 20 passed, 0 failed`},
		{"interrupted not counted", "CASE a PASS\nCASE b INTERRUPTED\n1 passed, 0 failed\n", "line 3: summary line contradicts"},
		{"counts a line twice", "CASE a PASS\n1 passed, 0 failed\n1 passed, 0 failed\n", "line 3: summary line contradicts"},
		{"too large", "CASE a PASS\n99999999999999999999 passed, 0 failed\n", "line 2: summary line contradicts"},
		{"cases but zero summary", "CASE a PASS\n0 passed, 0 failed\n", "line 2: summary line contradicts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadOutput(strings.NewReader(tt.in))
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("ReadOutput: %v, want no error", err)
				}
				return
			}
			if !errors.Is(err, ErrSummaryMismatch) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ReadOutput error = %v, want ErrSummaryMismatch containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestObservations: a judged line's invariants come back typed from their
// Outcome fields alone; an asserted field whose value happens to be an
// outcome's word is not one of them.
func TestObservations(t *testing.T) {
	l, err := Parse("CASE c FINDING scenario=s code==holds exec_at_most_once:=violated ok_only_if_executed:=holds own_answer:=sometimes own_answer_this_run~=holds recovers:=unsupported")
	if err != nil {
		t.Fatal(err)
	}
	want := []outcome.Observation{
		{Invariant: "exec_at_most_once", Outcome: outcome.Violated},
		{Invariant: "ok_only_if_executed", Outcome: outcome.Holds},
		{Invariant: "own_answer", Outcome: outcome.Sometimes},
		{Invariant: "recovers", Outcome: outcome.Unsupported},
	}
	if diff := cmp.Diff(want, l.Observations()); diff != "" {
		t.Errorf("Observations mismatch (-want +got):\n%s", diff)
	}
	if got := Format(l); !strings.Contains(got, " exec_at_most_once:=violated ") {
		t.Errorf("Format wrote %q, want the outcome as exec_at_most_once:=violated", got)
	}
}
