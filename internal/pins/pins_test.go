package pins

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/outcome"
)

// known accepts the names the tests use and refuses any other scenario.
func known(k Key) error {
	if !strings.HasPrefix(k.Scenario, "grpc_") {
		return fmt.Errorf("no scenario %q", k.Scenario)
	}
	return nil
}

const sample = `# grpc-go v1.85.0
retry     grpc_unavailable_after_exec  no_double_exec  # trailers-only UNAVAILABLE is retried by the policy

throttled grpc_unavailable_after_exec  no_double_exec  # throttling bounds amplification, not duplicates
keepalive grpc_unavailable_after_exec  no_double_exec sometimes  # a race of the stack's own
`

func TestParse(t *testing.T) {
	p, err := Parse("grpc-go", "grpc-go.txt", strings.NewReader(sample), known)
	if err != nil {
		t.Fatal(err)
	}
	want := []Pin{
		{Key{"retry", "grpc_unavailable_after_exec", "no_double_exec"}, "trailers-only UNAVAILABLE is retried by the policy", false, 2, "grpc-go.txt"},
		{Key{"throttled", "grpc_unavailable_after_exec", "no_double_exec"}, "throttling bounds amplification, not duplicates", false, 4, "grpc-go.txt"},
		{Key{"keepalive", "grpc_unavailable_after_exec", "no_double_exec"}, "a race of the stack's own", true, 5, "grpc-go.txt"},
	}
	if diff := cmp.Diff(want, p.All()); diff != "" {
		t.Errorf("pins (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"no reason", "retry grpc_x no_double_exec\n", "grpc-go.txt:1: retry grpc_x no_double_exec has no reason"},
		{"empty reason", "retry grpc_x no_double_exec #  \n", "has no reason"},
		{"two fields", "retry grpc_x # why\n", "grpc-go.txt:1: want <config> <scenario> <invariant> [sometimes] # <reason>"},
		{"four fields", "retry grpc_x a b # why\n", "want <config> <scenario> <invariant>"},
		{"five fields", "retry grpc_x a sometimes b # why\n", "want <config> <scenario> <invariant>"},
		{"duplicate", "retry grpc_x a # why\n\nretry grpc_x a # again\n", "grpc-go.txt:3: retry grpc_x a is pinned already on line 1"},
		{"unknown scenario", "retry late_response a # why\n", `grpc-go.txt:1: no scenario "late_response"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("grpc-go", "grpc-go.txt", strings.NewReader(tt.text), known)
			if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want ErrSyntax with %q", err, tt.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p, err := Load("grpc-js", filepath.Join(dir, "grpc-js.txt"), known)
	if err != nil || len(p.All()) != 0 {
		t.Errorf("a missing file: %v pins, error %v; want none, nil", p.All(), err)
	}
	path := filepath.Join(dir, "grpc-go.txt")
	if err := os.WriteFile(path, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := Load("grpc-go", path, known); err != nil || len(p.All()) != 3 {
		t.Errorf("Load: %d pins, error %v; want 3, nil", len(p.All()), err)
	}
}

// TestJudge: observations and pins agree only when every violation is
// pinned and every pin's violation happened.
func TestJudge(t *testing.T) {
	p, err := Parse("grpc-go", "grpc-go.txt", strings.NewReader(sample), known)
	if err != nil {
		t.Fatal(err)
	}
	const sc = "grpc_unavailable_after_exec"
	obs := func(pairs ...any) []outcome.Observation {
		var out []outcome.Observation
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, outcome.Observation{Invariant: pairs[i].(string), Outcome: pairs[i+1].(outcome.Outcome)})
		}
		return out
	}
	tests := []struct {
		name, config string
		obs          []outcome.Observation
		want         []string // substrings, one per disagreement
		unsupported  bool
		findings     []string
	}{
		{"pinned violation", "retry", obs("no_double_exec", outcome.Violated, "within_deadline", outcome.Holds), nil, false, []string{"no_double_exec"}},
		{"holds, no pin", "default", obs("no_double_exec", outcome.Holds), nil, false, nil},
		{"unpinned violation", "default", obs("no_double_exec", outcome.Violated),
			[]string{"no_double_exec: grpc-go violated no_double_exec, and grpc-go.txt pins no such violation"}, false, nil},
		{"stale pin", "retry", obs("no_double_exec", outcome.Holds),
			[]string{"no_double_exec: stale pin: grpc-go.txt:2 says grpc-go violates it (trailers-only UNAVAILABLE is retried by the policy), but it held"}, false, nil},
		{"pinned but unsupported", "retry", obs("no_double_exec", outcome.Unsupported),
			[]string{"grpc-go.txt:2 pins a violation, but grpc-go declares it unsupported"}, true, nil},
		{"pin never checked", "throttled", obs("within_deadline", outcome.Holds),
			[]string{"no_double_exec: stale pin: grpc-go.txt:4 pins it, but grpc_unavailable_after_exec does not check it"}, false, nil},
		// A sometimes pin is a finding in every run, whichever way this
		// run went, so that two runs' verdicts agree.
		{"sometimes pin, violated", "keepalive", obs("no_double_exec", outcome.Violated), nil, false, []string{"no_double_exec"}},
		{"sometimes pin, held", "keepalive", obs("no_double_exec", outcome.Holds), nil, false, []string{"no_double_exec"}},
		{"sometimes pin, unsupported", "keepalive", obs("no_double_exec", outcome.Unsupported),
			[]string{"grpc-go.txt:5 pins a violation, but grpc-go declares it unsupported"}, true, nil},
		{"all unsupported", "default", obs("hedge_tail", outcome.Unsupported, "hedge_extra", outcome.Unsupported), nil, true, nil},
		{"no outcome", "default", obs("no_double_exec", outcome.Outcome(0)), []string{`no_double_exec: observed ""`}, false, nil},
		{"an unknown outcome", "default", obs("no_double_exec", outcome.Outcome(9)), []string{`no_double_exec: observed "unknown_outcome_9"`}, false, nil},
		{"sometimes is a record, not an observation", "default", obs("no_double_exec", outcome.Sometimes), []string{`no_double_exec: observed "sometimes"`}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := p.Judge(tt.config, sc, tt.obs)
			if len(j.Disagreements) != len(tt.want) || j.Agree() != (len(tt.want) == 0) || j.AllUnsupported != tt.unsupported {
				t.Fatalf("got %q (all unsupported %v), want %d disagreements %q (all unsupported %v)", j.Disagreements, j.AllUnsupported, len(tt.want), tt.want, tt.unsupported)
			}
			if !slices.Equal(j.Findings, tt.findings) {
				t.Errorf("findings %q, want %q", j.Findings, tt.findings)
			}
			for i, w := range tt.want {
				if !strings.Contains(j.Disagreements[i], w) {
					t.Errorf("disagreement %d = %q, want it to contain %q", i, j.Disagreements[i], w)
				}
			}
		})
	}
}

// TestWriteReadsBack: what Write writes, Parse reads back as the same
// pins, sometimes included; a reason that would break the line is
// refused.
func TestWriteReadsBack(t *testing.T) {
	ps := []Pin{
		{Key: Key{"retry", "grpc_close_after_exec", "exec_at_most_once"}, Reason: "retried after the server ran it"},
		{Key: Key{"server", "grpcserver_timeout_0n", "srv_ok_iff_executed"}, Reason: "why: a # in a reason stays", Sometimes: true},
	}
	var b strings.Builder
	if err := Write(&b, []string{"my stack's pins", ""}, ps); err != nil {
		t.Fatal(err)
	}
	got, err := Parse("s", "f.txt", strings.NewReader(b.String()), func(Key) error { return nil })
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	all := got.All()
	if len(all) != 2 || all[0].Key != ps[0].Key || all[0].Reason != ps[0].Reason || all[0].Sometimes ||
		all[1].Key != ps[1].Key || !all[1].Sometimes || all[1].Reason != ps[1].Reason {
		t.Errorf("read back %+v from\n%s", all, b.String())
	}
	if err := Write(io.Discard, nil, []Pin{{Key: ps[0].Key, Reason: "two\nlines"}}); err == nil {
		t.Error("a reason with a newline was written")
	}
}

// TestMerge: the release's file speaks for what it covers, the shipped
// file for the rest, and each pin names the file it came from.
func TestMerge(t *testing.T) {
	base, err := Parse("s", "base.txt", strings.NewReader("retry a x # base a\nretry+key a x # base a key\nserver b y # base b\n"), func(Key) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	over, err := Parse("s@1", "over.txt", strings.NewReader("default a x # over a\n"), func(Key) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	m := Merge(base, over, func(config, scenario string) bool { return config == "retry" || config == "default" })
	var got []string
	for _, p := range m.All() {
		got = append(got, p.Path+":"+p.String())
	}
	slices.Sort(got)
	want := []string{"base.txt:retry+key a x", "base.txt:server b y", "over.txt:default a x"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v (retry a x is the release's to say, and it does not pin it)", got, want)
	}
	j := m.Judge("retry+key", "a", []outcome.Observation{{Invariant: "x", Outcome: outcome.Holds}})
	if len(j.Disagreements) != 1 || !strings.Contains(j.Disagreements[0], "base.txt:2") {
		t.Errorf("a stale base pin: %v, want it named base.txt:2", j.Disagreements)
	}
}
