package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/gotestsum/testjson"

	"github.com/rpcbench/rpcbench/internal/cases"
	"github.com/rpcbench/rpcbench/internal/nethost"
	"github.com/rpcbench/rpcbench/internal/pgcluster"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// errNoRoot is what nethost.Available says without root.
var errNoRoot = fmt.Errorf("%w: not running as root (run as root, e.g. sudo -E)", nethost.ErrUnavailable)

// errNoPG is what starting PostgreSQL says without its binaries.
var errNoPG = fmt.Errorf("start: %w", pgcluster.ErrNotFound)

// fakeDatabases is a PostgreSQL that hands out nothing.
type fakeDatabases struct{}

func (fakeDatabases) NewDatabase(context.Context, string) (string, error) { return "", nil }
func (fakeDatabases) DropDatabase(context.Context, string) error          { return nil }

// machine stands in for this machine's prerequisites for the rest of t:
// netns is what nethost.Available returns, pg what starting PostgreSQL
// returns (nil: it starts), and the RPCBENCH_REQUIRE_* variables are set
// as given. stopped counts the PostgreSQL stops.
func machine(t *testing.T, netns, pg error, requireNetns, requirePG bool) (stopped *int) {
	t.Helper()
	oldNetns, oldPG := netnsAvailable, startPG
	t.Cleanup(func() { netnsAvailable, startPG = oldNetns, oldPG })
	env := func(b bool) string {
		if b {
			return "1"
		}
		return ""
	}
	t.Setenv(nethost.EnvRequire, env(requireNetns))
	t.Setenv(pgcluster.EnvRequire, env(requirePG))
	stopped = new(int)
	netnsAvailable = func() error { return netns }
	startPG = func(context.Context, io.Writer) (scenario.Databases, func(), error) {
		if pg != nil {
			return nil, func() {}, pg
		}
		return fakeDatabases{}, func() { *stopped++ }, nil
	}
	return stopped
}

// needing returns c with Needs set to need.
func needing(c scenario.Case, need ...string) scenario.Case {
	c.Needs = need
	return c
}

// TestPrereqs: a scenario whose prerequisite is missing is not run; it
// reports SKIP in its place in the run order, saying why, and the run
// still exits 0 unless another scenario failed. Required prerequisites
// FAIL (test hosts) or stop the run before it starts (PostgreSQL).
func TestPrereqs(t *testing.T) {
	netWhy := errNoRoot.Error()
	netRequired := netWhy + "; RPCBENCH_REQUIRE_NETNS=1 demands test hosts"
	tests := []struct {
		name                    string
		netns, pg               error
		requireNetns, requirePG bool
		failLast                bool
		failFast                bool
		count                   int
		wantRuns                []string
		wantCode                int
		wantOut                 string
		wantStatus              string // in stderr; "" checks nothing
	}{
		{
			name:       "test hosts unavailable: SKIP",
			netns:      errNoRoot,
			wantRuns:   []string{"one", "db", "two"},
			wantCode:   exitOK,
			wantOut:    "CASE one PASS\nCASE net SKIP why=[" + netWhy + "]\nCASE db PASS\nCASE two PASS\n3 passed, 0 failed, 1 skipped\n",
			wantStatus: "rpcbench: 1 scenario will SKIP without test hosts: " + netWhy + "\n",
		},
		{
			name:     "a skip and a failure: exit 1",
			netns:    errNoRoot,
			failLast: true,
			wantRuns: []string{"one", "db", "two"},
			wantCode: exitFailed,
			wantOut:  "CASE one PASS\nCASE net SKIP why=[" + netWhy + "]\nCASE db PASS\nCASE two FAIL\n2 passed, 1 failed, 1 skipped\n",
		},
		{
			name:         "test hosts unavailable and required: FAIL",
			netns:        errNoRoot,
			requireNetns: true,
			wantRuns:     []string{"one", "db", "two"},
			wantCode:     exitFailed,
			wantOut:      "CASE one PASS\nCASE net FAIL why=[" + netRequired + "]\nCASE db PASS\nCASE two PASS\n3 passed, 1 failed\n",
			wantStatus:   "will FAIL without test hosts: " + netWhy,
		},
		{
			name:     "test hosts available: run",
			wantRuns: []string{"one", "net", "db", "two"},
			wantCode: exitOK,
			wantOut:  "CASE one PASS\nCASE net PASS\nCASE db PASS\nCASE two PASS\n4 passed, 0 failed\n",
		},
		{
			name:       "PostgreSQL missing: SKIP",
			pg:         errNoPG,
			wantRuns:   []string{"one", "net", "two"},
			wantCode:   exitOK,
			wantOut:    "CASE one PASS\nCASE net PASS\nCASE db SKIP why=[" + errNoPG.Error() + "]\nCASE two PASS\n3 passed, 0 failed, 1 skipped\n",
			wantStatus: "rpcbench: 1 scenario will SKIP without PostgreSQL: " + errNoPG.Error() + "\n",
		},
		{
			name:       "PostgreSQL missing and required: set-up error",
			pg:         errNoPG,
			requirePG:  true,
			wantCode:   exitError,
			wantStatus: "rpcbench: PostgreSQL for 1 scenario: " + errNoPG.Error() + "\n",
		},
		{
			name:       "PostgreSQL fails otherwise: set-up error",
			pg:         errors.New("initdb: disk full"),
			wantCode:   exitError,
			wantStatus: "rpcbench: PostgreSQL for 1 scenario: initdb: disk full\n",
		},
		{
			name:     "--failfast does not stop on a SKIP",
			netns:    errNoRoot,
			pg:       errNoPG,
			failFast: true,
			wantRuns: []string{"one", "two"},
			wantCode: exitOK,
			wantOut: "CASE one PASS\nCASE net SKIP why=[" + netWhy + "]\nCASE db SKIP why=[" + errNoPG.Error() + "]\nCASE two PASS\n" +
				"2 passed, 0 failed, 2 skipped\n",
		},
		{
			name:     "--count: skipped in every pass",
			netns:    errNoRoot,
			count:    2,
			wantRuns: []string{"one", "db", "two", "one", "db", "two"},
			wantCode: exitOK,
			wantOut: strings.Repeat("CASE one PASS\nCASE net SKIP why=["+netWhy+"]\nCASE db PASS\nCASE two PASS\n", 2) +
				"one  2/2\nnet  0/2  skipped in runs 1, 2\ndb   2/2\ntwo  2/2\n" +
				"6 passed, 0 failed, 2 skipped\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stopped := machine(t, tt.netns, tt.pg, tt.requireNetns, tt.requirePG)
			var runs fakeRuns
			a, stdout, stderr := testApp(t,
				runs.fake("one", cases.GroupEvidence, true),
				needing(runs.fake("net", cases.GroupNetwork, true), scenario.NeedsNetwork),
				needing(runs.fake("db", cases.GroupDurability, true), scenario.NeedsPostgres),
				runs.fake("two", cases.GroupEvidence, !tt.failLast),
			)
			err := runAll(context.Background(), &allOptions{app: a, Group: scenario.GroupAll, Evidence: "ev", EvidenceSet: true,
				Count: tt.count, control: control{FailFast: tt.failFast}})
			code, errText := outcome(err, stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %s)", code, tt.wantCode, errText)
			}
			if diff := cmp.Diff(tt.wantRuns, runs.names()); diff != "" {
				t.Errorf("scenarios run (-want +got):\n%s", diff)
			}
			if got := stdout.String(); got != tt.wantOut {
				t.Errorf("stdout =\n%s\nwant\n%s", got, tt.wantOut)
			}
			if !strings.Contains(errText, tt.wantStatus) {
				t.Errorf("stderr =\n%s\nwant it to contain %q", errText, tt.wantStatus)
			}
			if tt.pg == nil && *stopped != 1 {
				t.Errorf("PostgreSQL stopped %d times, want 1", *stopped)
			}
			if tt.wantCode == exitError {
				return
			}
			out := filepath.Join("ev", report.OutputFile)
			if strings.Contains(tt.wantOut, " SKIP ") {
				// A run that skipped does not replace evidence: here
				// there was none, and there still is none.
				if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a run with skips wrote %s (%v)", out, err)
				}
				if !strings.Contains(errText, "skipped on this machine") {
					t.Errorf("stderr =\n%s\nwant it to say the evidence was kept", errText)
				}
				return
			}
			if got := readFile(t, out); got != tt.wantOut {
				t.Errorf("output.txt =\n%s\nwant\n%s", got, tt.wantOut)
			}
		})
	}
}

// TestSkipsKeepEvidence: evidence written where the network scenarios ran
// is not replaced by a later run that had to skip them.
func TestSkipsKeepEvidence(t *testing.T) {
	var runs fakeRuns
	scenarios := []scenario.Case{
		runs.fake("one", cases.GroupEvidence, true),
		needing(runs.fake("net", cases.GroupNetwork, true), scenario.NeedsNetwork),
	}
	// testApp moves to a fresh directory each time: the evidence lives
	// at an absolute path that both runs share.
	ev := filepath.Join(t.TempDir(), "ev")
	run := func(netns error) (string, error) {
		machine(t, netns, nil, false, false)
		a, _, stderr := testApp(t, scenarios...)
		err := runAll(context.Background(), &allOptions{app: a, Group: scenario.GroupAll, Evidence: ev, EvidenceSet: true})
		return stderr.String(), err
	}
	if _, err := run(nil); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, filepath.Join(ev, report.OutputFile))
	if !strings.Contains(before, "CASE net PASS") {
		t.Fatalf("first run's output.txt =\n%s\nwant net to PASS", before)
	}
	stderr, err := run(errNoRoot)
	if err != nil {
		t.Fatalf("a run with a skip: %v, want exit 0", err)
	}
	if after := readFile(t, filepath.Join(ev, report.OutputFile)); after != before {
		t.Errorf("output.txt replaced by a run that skipped:\n%s\nwas\n%s", after, before)
	}
	if !strings.Contains(stderr, "1 scenario skipped on this machine; "+ev+" is left as it was") {
		t.Errorf("stderr =\n%s\nwant it to say where the run's output went", stderr)
	}
}

// TestPrereqsCheckedOnce: each prerequisite is checked once per batch,
// however many scenarios and passes need it, and not at all when none
// does; the scenario that needs PostgreSQL gets it in its Env.
func TestPrereqsCheckedOnce(t *testing.T) {
	machine(t, nil, nil, false, false)
	checks, starts := 0, 0
	netnsAvailable = func() error { checks++; return nil }
	startPG = func(context.Context, io.Writer) (scenario.Databases, func(), error) {
		starts++
		return fakeDatabases{}, func() {}, nil
	}
	var runs fakeRuns
	a, _, stderr := testApp(t,
		needing(runs.fake("net1", cases.GroupNetwork, true), scenario.NeedsNetwork),
		needing(runs.fake("net2", cases.GroupNetwork, true), scenario.NeedsNetwork),
		needing(runs.fake("db", cases.GroupDurability, true), scenario.NeedsPostgres),
		runs.fake("plain", cases.GroupEvidence, true),
	)
	err := runRun(context.Background(), &runOptions{app: a, Names: []string{"net1", "net2", "db"}, Count: 3})
	if code, errText := outcome(err, stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, errText)
	}
	if checks != 1 || starts != 1 {
		t.Errorf("nethost.Available called %d times, PostgreSQL started %d times; want 1, 1", checks, starts)
	}
	for _, r := range runs.runs {
		if r.Name == "db" && r.Env.Postgres == nil {
			t.Errorf("%s ran without Env.Postgres", r.Name)
		}
	}

	checks, starts = 0, 0
	if err := runRun(context.Background(), &runOptions{app: a, Names: []string{"plain"}}); err != nil {
		t.Fatal(err)
	}
	if checks != 0 || starts != 0 {
		t.Errorf("with no scenario needing them: nethost.Available called %d times, PostgreSQL started %d times; want 0, 0", checks, starts)
	}
}

// TestPrereqsMachineReadable: a skipped scenario is "skip" in --json,
// <skipped> in --junit and a skipped test to gotestsum, and its group's
// package passes.
func TestPrereqsMachineReadable(t *testing.T) {
	machine(t, errNoRoot, nil, false, false)
	var runs fakeRuns
	a, _, stderr := testApp(t, runs.fake("good", cases.GroupEvidence, true),
		needing(runs.fake("net", cases.GroupNetwork, true), scenario.NeedsNetwork))
	err := runRun(context.Background(), &runOptions{app: a, Names: []string{"good", "net"}, JSON: "r.json",
		control: control{JUnit: "r.xml", Events: "r.events"}})
	if code, errText := outcome(err, stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, errText)
	}

	var doc struct {
		Cases []struct {
			Name, Verdict, Why string
			Pass               bool
		} `json:"cases"`
		Passed, Failed, Skipped int
		Summary                 string
	}
	if err := json.Unmarshal([]byte(readFile(t, "r.json")), &doc); err != nil {
		t.Fatal(err)
	}
	type jcase = struct {
		Name, Verdict, Why string
		Pass               bool
	}
	want := []jcase{{"good", "pass", "", true}, {"net", "skip", errNoRoot.Error(), false}}
	if diff := cmp.Diff(want, doc.Cases); diff != "" {
		t.Errorf("json cases (-want +got):\n%s", diff)
	}
	if doc.Passed != 1 || doc.Failed != 0 || doc.Skipped != 1 || doc.Summary != "1 passed, 0 failed, 1 skipped" {
		t.Errorf("json totals: passed %d, failed %d, skipped %d, summary %q; want 1, 0, 1, %q",
			doc.Passed, doc.Failed, doc.Skipped, doc.Summary, "1 passed, 0 failed, 1 skipped")
	}

	if x := readFile(t, "r.xml"); !strings.Contains(x, `<skipped message="`+errNoRoot.Error()+`"></skipped>`) ||
		!strings.Contains(x, `failures="0"`) {
		t.Errorf("junit has no <skipped> with the reason, or counts a failure:\n%s", x)
	}

	b, err := os.ReadFile("r.events")
	if err != nil {
		t.Fatal(err)
	}
	exec, err := testjson.ScanTestOutput(testjson.ScanConfig{Stdout: bytes.NewReader(b)})
	if err != nil {
		t.Fatalf("gotestsum cannot read the stream: %v", err)
	}
	var skipped []string
	for _, tc := range exec.Skipped() {
		skipped = append(skipped, tc.Package+" "+tc.Test.Name())
	}
	if want := []string{"rpcbench/network net"}; !slices.Equal(skipped, want) {
		t.Errorf("gotestsum skipped %q, want %q", skipped, want)
	}
	if exec.Total() != 2 || len(exec.Failed()) != 0 {
		t.Errorf("gotestsum: %d tests, %d failed; want 2, 0", exec.Total(), len(exec.Failed()))
	}
	if got := exec.Package(report.EventPackage(cases.GroupNetwork)).Result(); got != testjson.ActionPass {
		t.Errorf("gotestsum: package %s %s, want %s", report.EventPackage(cases.GroupNetwork), got, testjson.ActionPass)
	}
}

// TestInsteadOfTwoNeeds: a scenario with two prerequisites runs only when
// both are met; one missing and required FAILs it even when the other
// is missing and would only SKIP it.
func TestInsteadOfTwoNeeds(t *testing.T) {
	skip := unmet{report.Skipped, "no adapter"}
	fail := unmet{report.Fail, "no test hosts; required"}
	c := needing(scenario.Fake("both", cases.GroupGRPC, "", nil), scenario.NeedsAdapter("grpc-go"), scenario.NeedsNetwork)
	tests := []struct {
		name        string
		missing     map[string]unmet
		wantInstead bool
		want        report.Verdict
		wantWhy     string
	}{
		{"both met", map[string]unmet{scenario.NeedsPostgres: fail}, false, report.Pass, ""},
		{"the first missing", map[string]unmet{scenario.NeedsAdapter("grpc-go"): skip}, true, report.Skipped, skip.why},
		{"the second missing", map[string]unmet{scenario.NeedsNetwork: skip}, true, report.Skipped, skip.why},
		{"a FAIL outweighs a SKIP", map[string]unmet{scenario.NeedsAdapter("grpc-go"): skip, scenario.NeedsNetwork: fail}, true, report.Fail, fail.why},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, instead := prereqs{missing: tt.missing}.instead(c)
			if instead != tt.wantInstead {
				t.Fatalf("instead = %v, want %v (%s)", instead, tt.wantInstead, report.Format(line))
			}
			if !instead {
				return
			}
			if line.Verdict != tt.want || !strings.Contains(report.Format(line), tt.wantWhy) {
				t.Errorf("got %s, want %s saying %q", report.Format(line), tt.want, tt.wantWhy)
			}
		})
	}
}
