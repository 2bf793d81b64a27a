package scorecard

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/outcome"
	"github.com/rpcbench/rpcbench/internal/report"
)

const sample = `CASE a_rpcbench PASS scenario=a stack=rpcbench config=client code=OK exec_at_most_once:=holds recovers:=holds
CASE a_grpcgo_default PASS scenario=a stack=grpc-go config=default version=1.85.0 code=UNAVAILABLE exec_at_most_once:=holds recovers:=violated
CASE b_rpcbench PASS scenario=b stack=rpcbench config=client unsupported=[no such fault] exec_at_most_once:=unsupported
CASE b_grpcgo_default FAIL scenario=b stack=grpc-go config=default version=1.85.0 exec_at_most_once:=violated why=[unpinned]
CASE c_grpcgo_default ERROR scenario=c stack=grpc-go config=default why=[adapter grpc-go exited]
CASE late_response_dropped_by_id PASS A==DEADLINE_EXCEEDED
4 passed, 1 failed, 1 error
`

func build(t *testing.T) Card { return buildFrom(t, sample) }

// buildFrom is the card of text, a run's output.
func buildFrom(t *testing.T, text string) Card {
	t.Helper()
	lines, err := report.ReadOutput(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Build(lines)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestBuild: a row per scenario and invariant, a column per stack and
// configuration in the order they first appear, lines of other groups
// left out, a case that observed nothing on a row of its own.
func TestBuild(t *testing.T) {
	c := build(t)
	want := Card{
		Columns: []Column{{Stack: "rpcbench", Config: "client"}, {Stack: "grpc-go", Config: "default", Version: "1.85.0"}},
		Rows: []Row{
			{"a", "exec_at_most_once", []Cell{{outcome.Holds, "a_rpcbench", "PASS"}, {outcome.Holds, "a_grpcgo_default", "PASS"}}},
			{"a", "recovers", []Cell{{outcome.Holds, "a_rpcbench", "PASS"}, {outcome.Violated, "a_grpcgo_default", "PASS"}}},
			{"b", "exec_at_most_once", []Cell{{outcome.Unsupported, "b_rpcbench", "PASS"}, {outcome.Violated, "b_grpcgo_default", "FAIL"}}},
			{"c", "-", []Cell{{}, {0, "c_grpcgo_default", "ERROR"}}},
		},
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("card (-want +got):\n%s", diff)
	}
}

// TestWriteText: a table per stack beside the reference, each scenario
// on a line of its own with its invariants beneath, plain without
// colour.
func TestWriteText(t *testing.T) {
	var b strings.Builder
	if err := build(t).WriteText(&b, TextOptions{Width: 80}); err != nil {
		t.Fatal(err)
	}
	want := "grpc-go 1.85.0\n" +
		"\n" +
		"                     rpcbench  grpc-go\n" +
		"                     client    default\n" +
		"a\n" +
		"  exec_at_most_once  holds     holds\n" +
		"  recovers           holds     VIOLATED\n" +
		"b\n" +
		"  exec_at_most_once  n/a       VIOLATED (FAIL)\n" +
		"\n" +
		"                     grpc-go\n" +
		"                     default\n" +
		"c\n" +
		"  -                  - (ERROR)\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
}

// wide is a run of the reference and two stacks in every configuration,
// and their servers.
const wide = `CASE a_rpcbench PASS scenario=a_scenario_with_a_long_name stack=rpcbench config=client exec_at_most_once:=holds
CASE a_grpcgo_default PASS scenario=a_scenario_with_a_long_name stack=grpc-go config=default version=1.85.0 exec_at_most_once:=violated
CASE a_grpcgo_retry PASS scenario=a_scenario_with_a_long_name stack=grpc-go config=retry version=1.85.0 exec_at_most_once:=sometimes
CASE a_grpcgo_retry_key PASS scenario=a_scenario_with_a_long_name stack=grpc-go config=retry+key version=1.85.0 exec_at_most_once:=holds
CASE a_grpcgo_throttled PASS scenario=a_scenario_with_a_long_name stack=grpc-go config=throttled version=1.85.0 exec_at_most_once:=holds
CASE a_connectgo_default PASS scenario=a_scenario_with_a_long_name stack=connect-go config=default version=1.21.1 exec_at_most_once:=holds
CASE a_connectgo_retry PASS scenario=a_scenario_with_a_long_name stack=connect-go config=retry version=1.21.1 exec_at_most_once:=unsupported
CASE h_rpcbench PASS scenario=h stack=rpcbench config=hedged hedges_bounded:=holds
CASE h_grpcgo_default PASS scenario=h stack=grpc-go config=default version=1.85.0 hedges_bounded:=holds
CASE h_grpcgo_hedged PASS scenario=h stack=grpc-go config=hedged version=1.85.0 hedges_bounded:=violated
CASE h_connectgo_default PASS scenario=h stack=connect-go config=default version=1.21.1 hedges_bounded:=holds
CASE s_rpcserver PASS scenario=s stack=rpcserver config=server srv_expired_not_executed:=holds
CASE s_grpcgo PASS scenario=s stack=grpc-go config=server version=1.85.0 srv_expired_not_executed:=holds
CASE s_connectgo PASS scenario=s stack=connect-go config=server version=1.21.1 srv_expired_not_executed:=violated
`

// TestWriteTextFits: every line fits the width, at any width that
// leaves room beside the row names for the widest cell, and every column
// is still shown: a block too wide is cut into parts, each repeating the
// row names.
func TestWriteTextFits(t *testing.T) {
	c := buildFrom(t, wide)
	for _, width := range []int{50, 60, 80, 100} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			var b strings.Builder
			if err := c.WriteText(&b, TextOptions{Width: width}); err != nil {
				t.Fatal(err)
			}
			text := b.String()
			for _, l := range strings.Split(text, "\n") {
				if len(l) > width {
					t.Errorf("%d columns at width %d: %q", len(l), width, l)
				}
			}
			for _, cfg := range []string{"client", "default", "retry", "retry+key", "throttled", "hedged", "server"} {
				if !strings.Contains(text, " "+cfg+"\n") && !strings.Contains(text, " "+cfg+" ") {
					t.Errorf("no column of configuration %s at width %d:\n%s", cfg, width, text)
				}
			}
			if !strings.Contains(text, "VIOLATED sometimes") {
				t.Errorf("no VIOLATED sometimes cell at width %d:\n%s", width, text)
			}
		})
	}
}

// TestWriteTextColor: with colour, holds is green, VIOLATED red,
// VIOLATED sometimes yellow, n/a and missing cells faint, and a verdict
// that does not agree with the pins stands apart; without, no escape.
func TestWriteTextColor(t *testing.T) {
	c := Card{
		Columns: []Column{{Stack: "rpcbench", Config: "client"}, {Stack: "grpc-go", Config: "default"}, {Stack: "grpc-go", Config: "retry"}},
		Rows: []Row{
			{"a", "one", []Cell{{outcome.Holds, "a_rpcbench", "PASS"}, {outcome.Violated, "a_grpcgo_default", "FINDING"}, {outcome.Sometimes, "a_grpcgo_retry", "PASS"}}},
			{"a", "two", []Cell{{outcome.Unsupported, "a_rpcbench", "N/A"}, {outcome.Holds, "a_grpcgo_default", "FAIL"}, {}}},
		},
	}
	var on, off strings.Builder
	if err := c.WriteText(&on, TextOptions{Width: 100, Color: true}); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteText(&off, TextOptions{Width: 100}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\x1b[32mholds", "\x1b[31;1mVIOLATED\x1b", "\x1b[33mVIOLATED sometimes", "\x1b[2mn/a", "\x1b[2m-\x1b", "\x1b[1;7m(FAIL)"} {
		if !strings.Contains(on.String(), want) {
			t.Errorf("coloured text lacks %q:\n%q", want, on.String())
		}
	}
	if strings.Contains(off.String(), "\x1b") {
		t.Errorf("text without colour holds an escape:\n%q", off.String())
	}
	if !strings.Contains(off.String(), "  two  n/a       holds (FAIL)  -\n") {
		t.Errorf("text without colour:\n%s", off.String())
	}
}

// TestFilter: the named stacks and configurations beside the reference
// columns; rows without a judged cell left, and reference columns left
// without a cell, go.
func TestFilter(t *testing.T) {
	c := buildFrom(t, wide)
	if diff := cmp.Diff([]string{"rpcbench", "rpcserver"}, c.References()); diff != "" {
		t.Errorf("references (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"grpc-go", "connect-go"}, c.Stacks()); diff != "" {
		t.Errorf("stacks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"default", "retry", "retry+key", "throttled", "hedged", "server"}, c.Configs()); diff != "" {
		t.Errorf("configs (-want +got):\n%s", diff)
	}
	cols := func(c Card) []string {
		var out []string
		for _, col := range c.Columns {
			out = append(out, col.Stack+"/"+col.Config)
		}
		return out
	}
	rows := func(c Card) []string {
		var out []string
		for _, r := range c.Rows {
			out = append(out, r.Scenario)
		}
		return out
	}
	tests := []struct {
		name             string
		stacks, configs  []string
		wantCols, wantRs []string
	}{
		{"none", nil, nil, cols(c), rows(c)},
		{"grpc-go", []string{"grpc-go"}, nil,
			[]string{"rpcbench/client", "grpc-go/default", "grpc-go/retry", "grpc-go/retry+key", "grpc-go/throttled", "rpcbench/hedged", "grpc-go/hedged", "rpcserver/server", "grpc-go/server"},
			[]string{"a_scenario_with_a_long_name", "h", "s"}},
		{"retry", nil, []string{"retry"},
			[]string{"rpcbench/client", "grpc-go/retry", "connect-go/retry"}, []string{"a_scenario_with_a_long_name"}},
		{"connect-go servers", []string{"connect-go"}, []string{"server"},
			[]string{"rpcserver/server", "connect-go/server"}, []string{"s"}},
		{"hedged", nil, []string{"hedged"},
			[]string{"rpcbench/hedged", "grpc-go/hedged"}, []string{"h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := c.Filter(tt.stacks, tt.configs)
			if diff := cmp.Diff(tt.wantCols, cols(f)); diff != "" {
				t.Errorf("columns (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRs, rows(f)); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
			for _, r := range f.Rows {
				if len(r.Cells) != len(f.Columns) {
					t.Errorf("row %s has %d cells for %d columns", r.Scenario, len(r.Cells), len(f.Columns))
				}
			}
		})
	}
}

func TestWriteMarkdown(t *testing.T) {
	var b strings.Builder
	if err := build(t).WriteMarkdown(&b, "report.html"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| scenario | invariant | rpcbench client | grpc-go 1.85.0 default |\n|---|---|---|---|\n",
		"| `a` | `recovers` | [holds](report.html#case-a_rpcbench) | [**VIOLATED**](report.html#case-a_grpcgo_default) |\n",
		"| `b` | `exec_at_most_once` | [n/a](report.html#case-b_rpcbench) | [**VIOLATED (FAIL)**](report.html#case-b_grpcgo_default) |\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, b.String())
		}
	}
}

func TestBuildNothing(t *testing.T) {
	lines, _ := report.ReadOutput(strings.NewReader("CASE late_response_dropped_by_id PASS A==DEADLINE_EXCEEDED\n"))
	if _, err := Build(lines); err == nil || !strings.Contains(err.Error(), "no grpc group CASE line") {
		t.Errorf("Build of no grpc line: %v, want an error saying so", err)
	}
}

// TestByStack: each stack beside the reference columns, a column of n/a
// cells named instead of shown, rows the stack has no cell in dropped.
func TestByStack(t *testing.T) {
	const two = `CASE a_rpcbench PASS scenario=a stack=rpcbench config=client exec_at_most_once:=holds
CASE a_grpcgo_default PASS scenario=a stack=grpc-go config=default version=1.85.0 exec_at_most_once:=violated
CASE a_connectgo_default PASS scenario=a stack=connect-go config=default version=1.21.1 exec_at_most_once:=holds
CASE a_connectgo_retry PASS scenario=a stack=connect-go config=retry version=1.21.1 unsupported=[connect-go lacks retry_policy] exec_at_most_once:=unsupported
CASE k_rpcbench PASS scenario=k stack=rpcbench config=client dead_peer_detected:=unsupported
CASE k_grpcgo_keepalive PASS scenario=k stack=grpc-go config=keepalive version=1.85.0 dead_peer_detected:=holds
`
	var b strings.Builder
	if err := buildFrom(t, two).WriteMarkdownByStack(&b, ""); err != nil {
		t.Fatal(err)
	}
	want := "**grpc-go 1.85.0**\n\n" +
		"| scenario | invariant | rpcbench client | grpc-go 1.85.0 default | grpc-go 1.85.0 keepalive |\n|---|---|---|---|---|\n" +
		"| `a` | `exec_at_most_once` | holds | **VIOLATED** | - |\n" +
		"| `k` | `dead_peer_detected` | n/a | - | holds |\n" +
		"\n**connect-go 1.21.1** (n/a throughout, for want of a capability: `retry`)\n\n" +
		"| scenario | invariant | rpcbench client | connect-go 1.21.1 default |\n|---|---|---|---|\n" +
		"| `a` | `exec_at_most_once` | holds | holds |\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("markdown by stack (-want +got):\n%s", diff)
	}
}

// TestTargetServers: rpcbench target's lines, a user's service judged
// from outside in the server rows, are a servers table said to be that,
// in the text and the Markdown alike.
func TestTargetServers(t *testing.T) {
	const lines = `CASE target_timeout_0n PASS scenario=grpcserver_timeout_0n stack=orders config=server srv_expired_not_executed:=holds srv_ok_iff_executed:=holds
CASE target_bad_frame FAIL scenario=grpcserver_bad_frame stack=orders config=server srv_bad_input_isolated:=violated
`
	c := buildFrom(t, lines)
	var md, text strings.Builder
	if err := c.WriteMarkdownByStack(&md, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteText(&text, TextOptions{Width: 120}); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{md.String(), text.String()} {
		if !strings.Contains(out, "judged from outside by rpcbench target") || strings.Contains(out, "rpcserver's gRPC side first") ||
			!strings.Contains(out, "grpcserver_bad_frame") || !strings.Contains(out, "orders") {
			t.Errorf("target's scorecard:\n%s", out)
		}
	}
}

// TestProxyService: a user's service judged through rpcbench proxy is
// one stack's column with no reference beside it, and its cells show
// (they once came out as no table at all).
func TestProxyService(t *testing.T) {
	const lines = `CASE proxy_exec_at_most_once FAIL scenario=proxy_exec_at_most_once stack=shop config=proxy calls=3 exec_at_most_once:=violated
CASE proxy_within_deadline PASS scenario=proxy_within_deadline stack=shop config=proxy calls=3 within_deadline:=holds
`
	c := buildFrom(t, lines)
	var md, text strings.Builder
	if err := c.WriteMarkdownByStack(&md, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteText(&text, TextOptions{Width: 120}); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{md.String(), text.String()} {
		if !strings.Contains(out, "proxy_exec_at_most_once") || !strings.Contains(out, "VIOLATED (FAIL)") || !strings.Contains(out, "proxy_within_deadline") {
			t.Errorf("the proxy's scorecard:\n%s", out)
		}
	}
}

// TestServersSection: the server columns (configuration server) are one
// table after the client stacks', never a stack card of their own, and
// their rows are left out of the client tables.
func TestServersSection(t *testing.T) {
	const mixed = `CASE a_rpcbench PASS scenario=a stack=rpcbench config=client exec_at_most_once:=holds
CASE a_grpcgo_default PASS scenario=a stack=grpc-go config=default version=1.85.0 exec_at_most_once:=holds
CASE s_rpcserver PASS scenario=s stack=rpcserver config=server srv_expired_not_executed:=holds log_matches_bank:=holds
CASE s_grpcjs PASS scenario=s stack=grpc-js config=server version=1.14.7 srv_expired_not_executed:=violated log_matches_bank:=sometimes log_matches_bank_this_run~=holds
`
	var b strings.Builder
	if err := buildFrom(t, mixed).WriteMarkdownByStack(&b, ""); err != nil {
		t.Fatal(err)
	}
	want := "**grpc-go 1.85.0**\n\n" +
		"| scenario | invariant | rpcbench client | grpc-go 1.85.0 default |\n|---|---|---|---|\n" +
		"| `a` | `exec_at_most_once` | holds | holds |\n" +
		"\n**Servers**, each with its library's default options, rpcserver's gRPC side first\n\n" +
		"| scenario | invariant | rpcserver server | grpc-js 1.14.7 server |\n|---|---|---|---|\n" +
		"| `s` | `srv_expired_not_executed` | holds | **VIOLATED** |\n" +
		"| `s` | `log_matches_bank` | holds | **VIOLATED sometimes** |\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("markdown with servers (-want +got):\n%s", diff)
	}
}

// TestCellText: a cell whose verdict agrees with its pins (PASS,
// FINDING, N/A) shows its outcome alone; any other verdict is added.
func TestCellText(t *testing.T) {
	tests := []struct {
		cell Cell
		want string
	}{
		{Cell{outcome.Holds, "a", "PASS"}, "holds"},
		{Cell{outcome.Violated, "a", "FINDING"}, "VIOLATED"},
		{Cell{outcome.Sometimes, "a", "FINDING"}, "VIOLATED sometimes"},
		{Cell{outcome.Unsupported, "a", "N/A"}, "n/a"},
		{Cell{outcome.Violated, "a", "FAIL"}, "VIOLATED (FAIL)"},
		{Cell{0, "a", "ERROR"}, "- (ERROR)"},
		{Cell{}, "-"},
	}
	for _, tt := range tests {
		t.Run(tt.cell.Outcome.String()+"/"+tt.cell.Verdict, func(t *testing.T) {
			if got := tt.cell.Text(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestByStackAgreeingVerdicts: a column of n/a cells whose cases agree
// with their pins (PASS or N/A) is named as unrun; one whose case did
// not (FAIL) is shown, to be looked at.
func TestByStackAgreeingVerdicts(t *testing.T) {
	for _, tt := range []struct {
		verdict string
		unrun   bool
	}{{"PASS", true}, {"N/A", true}, {"FINDING", true}, {"FAIL", false}, {"ERROR", false}} {
		t.Run(tt.verdict, func(t *testing.T) {
			c := Card{
				Columns: []Column{{Stack: "rpcbench", Config: "client"}, {Stack: "grpcio", Config: "default"}, {Stack: "grpcio", Config: "hedged"}},
				Rows: []Row{{"a", "exec_at_most_once", []Cell{
					{outcome.Holds, "a_rpcbench", "PASS"}, {outcome.Violated, "a_grpcio_default", "FINDING"}, {outcome.Unsupported, "a_grpcio_hedged", tt.verdict},
				}}},
			}
			sc := c.ByStack()
			if len(sc) != 1 {
				t.Fatalf("got %d stack cards, want 1", len(sc))
			}
			if got := len(sc[0].Unrun) == 1; got != tt.unrun {
				t.Errorf("hedged named as unrun: got %t, want %t (Unrun %q)", got, tt.unrun, sc[0].Unrun)
			}
		})
	}
}

// TestRowsAreOutcomeFields: a row is an Outcome field (inv:=outcome),
// never an asserted field whose value merely spells an outcome.
func TestRowsAreOutcomeFields(t *testing.T) {
	lines, err := report.ReadOutput(strings.NewReader("CASE a_rpcbench PASS scenario=a stack=rpcbench config=client state==holds recovers:=holds\n1 passed, 0 failed\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Build(lines)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range c.Rows {
		rows = append(rows, r.Invariant)
	}
	if want := []string{"recovers"}; !slices.Equal(rows, want) {
		t.Errorf("rows %v, want %v", rows, want)
	}
}

// TestRefusesOldOutput: a judged case that passed with no outcome field,
// as rpcbench wrote them before invariant:=outcome, is refused by name,
// not tabulated as rows of "-".
func TestRefusesOldOutput(t *testing.T) {
	lines, err := report.ReadOutput(strings.NewReader("CASE a_rpcbench PASS scenario=a stack=rpcbench config=client exec_at_most_once==holds\n1 passed, 0 failed\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(lines); err == nil || !strings.Contains(err.Error(), "CASE a_rpcbench PASS records no invariant") {
		t.Errorf("got %v, want a refusal naming a_rpcbench", err)
	}
}

// judgedSometimes is a run as the judge writes it where a race its pins
// mark sometimes held in one column's run and was violated in another's:
// each records the invariant as sometimes and this run's outcome as
// volatile. The grpcio server column has no other cell.
const judgedSometimes = `CASE t_rpcbench PASS scenario=t stack=rpcbench config=client exec_at_most_once:=holds
CASE t_grpcgo_retry FINDING scenario=t stack=grpc-go config=retry version=1.85.0 exec_at_most_once:=sometimes exec_at_most_once_this_run~=holds
CASE s_rpcserver PASS scenario=s stack=rpcserver config=server srv_ok_iff_executed_tally~=held=100,violated=0 srv_ok_iff_executed:=holds
CASE s_grpcio FINDING scenario=s stack=grpcio config=server version=1.51.1 srv_ok_iff_executed_tally~=held=88,violated=12 srv_ok_iff_executed:=sometimes srv_ok_iff_executed_this_run~=violated
`

// TestSometimesRendered: a cell recorded sometimes reads VIOLATED
// sometimes in every rendering, whichever way its run went: never holds
// or a plain VIOLATED, and never dropped, by the card, the stack and
// server tables, the text, a filter, or JSON.
func TestSometimesRendered(t *testing.T) {
	c := buildFrom(t, judgedSometimes)
	for _, want := range []struct{ sc, stack, config string }{{"t", "grpc-go", "retry"}, {"s", "grpcio", "server"}} {
		col := slices.IndexFunc(c.Columns, func(col Column) bool { return col.Stack == want.stack && col.Config == want.config })
		row := slices.IndexFunc(c.Rows, func(r Row) bool { return r.Scenario == want.sc })
		if col < 0 || row < 0 {
			t.Fatalf("card has no cell of %s in %s %s:\n%+v", want.sc, want.stack, want.config, c)
		}
		if cl := c.Rows[row].Cells[col]; cl.Outcome != outcome.Sometimes || cl.Text() != "VIOLATED sometimes" {
			t.Errorf("card: %s's cell in %s %s is %v, %q; want sometimes, %q", want.sc, want.stack, want.config, cl.Outcome, cl.Text(), "VIOLATED sometimes")
		}
	}
	render := map[string]func(Card) string{
		"markdown": func(c Card) string {
			var b strings.Builder
			c.WriteMarkdown(&b, "")
			return b.String()
		},
		"markdown by stack": func(c Card) string {
			var b strings.Builder
			c.WriteMarkdownByStack(&b, "")
			return b.String()
		},
		"text": func(c Card) string {
			var b strings.Builder
			c.WriteText(&b, TextOptions{Width: 80})
			return b.String()
		},
		"colour text": func(c Card) string {
			var b strings.Builder
			c.WriteText(&b, TextOptions{Width: 80, Color: true})
			return b.String()
		},
		"json": func(c Card) string {
			var b strings.Builder
			c.WriteJSON(&b)
			return b.String()
		},
	}
	wants := map[string][]string{
		"markdown":          {"| `t` | `exec_at_most_once` | holds | **VIOLATED sometimes** | - | - |", "| `s` | `srv_ok_iff_executed` | - | - | holds | **VIOLATED sometimes** |"},
		"markdown by stack": {"| `t` | `exec_at_most_once` | holds | **VIOLATED sometimes** |", "| `s` | `srv_ok_iff_executed` | holds | **VIOLATED sometimes** |"},
		"text":              {"  exec_at_most_once  holds     VIOLATED sometimes\n", "  srv_ok_iff_executed  holds      VIOLATED sometimes\n"},
		"colour text":       {"\x1b[33mVIOLATED sometimes\x1b[0m\n"},
		"json":              {"\"outcome\": \"sometimes\",\n          \"case\": \"t_grpcgo_retry\"", "\"outcome\": \"sometimes\",\n          \"case\": \"s_grpcio\""},
	}
	cards := map[string]Card{"card": c, "grpc-go filtered": c.Filter([]string{"grpc-go"}, nil), "grpcio filtered": c.Filter([]string{"grpcio"}, nil)}
	for cname, card := range cards {
		for name, f := range render {
			t.Run(cname+"/"+name, func(t *testing.T) {
				got := f(card)
				want := 1
				if cname == "card" {
					want = 2
				}
				if n := strings.Count(got, "sometimes"); n != want {
					t.Errorf("%d cells read sometimes, want %d:\n%s", n, want, got)
				}
				if cname != "card" {
					return
				}
				for _, w := range wants[name] {
					if !strings.Contains(got, w) {
						t.Errorf("lacks %q:\n%s", w, got)
					}
				}
			})
		}
	}
}
