package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"slices"
	"strings"
	"testing"

	"gotest.tools/gotestsum/testjson"

	"github.com/rpcbench/rpcbench/internal/report"
)

// TestMachineReadableOutputs runs scenarios with --json, --junit and
// --json-events and reads each back the way its consumers do: the JSON
// by its documented schema, the JUnit XML as XML, the event stream with
// gotestsum's own parser.
func TestMachineReadableOutputs(t *testing.T) {
	var runs fakeRuns
	a, _, stderr := testApp(t, runs.fake("good", "evidence", true), runs.fake("bad", "robustness", false,
		report.Field{Key: "why", Value: "balance=980, want 990"}))
	err := runRun(context.Background(), &runOptions{app: a, Names: []string{"good", "bad"}, Count: 2, JSON: "r.json",
		control: control{JUnit: "r.xml", Events: "r.events"}})
	if code, errText := outcome(err, stderr); code != exitFailed {
		t.Fatalf("exit %d: %s", code, errText)
	}

	var doc struct {
		SchemaVersion int `json:"schema_version"`
		Run           struct {
			Command []string `json:"command"`
			Version string   `json:"version"`
		} `json:"run"`
		Cases []struct {
			Name, Group, Verdict, Why string
			PassIndex                 int `json:"pass_index"`
		} `json:"cases"`
	}
	if err := json.Unmarshal([]byte(readFile(t, "r.json")), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SchemaVersion != report.SchemaVersion || len(doc.Run.Command) == 0 || doc.Run.Version == "" {
		t.Errorf("schema %d, run %+v", doc.SchemaVersion, doc.Run)
	}
	var cs []string
	for _, c := range doc.Cases {
		cs = append(cs, strings.Join([]string{c.Name, c.Group, c.Verdict, c.Why, string(rune('0' + c.PassIndex))}, "|"))
	}
	want := []string{"good|evidence|pass||1", "bad|robustness|fail|balance=980, want 990|1", "good|evidence|pass||2", "bad|robustness|fail|balance=980, want 990|2"}
	if !slices.Equal(cs, want) {
		t.Errorf("json cases %q, want %q", cs, want)
	}

	var junit struct {
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name string `xml:"name,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(readFile(t, "r.xml")), &junit); err != nil {
		t.Fatal(err)
	}
	if junit.Failures != 2 || len(junit.Suites) != 2 || junit.Suites[0].Name != "evidence" {
		t.Errorf("junit: %+v", junit)
	}

	b, err := os.ReadFile("r.events")
	if err != nil {
		t.Fatal(err)
	}
	exec, err := testjson.ScanTestOutput(testjson.ScanConfig{Stdout: bytes.NewReader(b)})
	if err != nil {
		t.Fatalf("gotestsum cannot read the stream: %v", err)
	}
	if got := exec.Packages(); !slices.Equal(got, []string{"rpcbench/evidence", "rpcbench/robustness"}) {
		t.Errorf("gotestsum packages %v", got)
	}
	if exec.Total() != 4 || len(exec.Failed()) != 2 {
		t.Errorf("gotestsum: %d tests, %d failed; want 4, 2", exec.Total(), len(exec.Failed()))
	}
	for _, tc := range exec.Failed() {
		if tc.Test.Name() != "bad" || !strings.Contains(strings.Join(exec.OutputLines(tc), ""), "CASE bad FAIL") {
			t.Errorf("failed test %v, output %q", tc.Test, exec.OutputLines(tc))
		}
	}
}

// TestEventsToStdout: --json-events - takes stdout and leaves stderr to
// errors (the stream holds the CASE lines); two outputs on stdout are
// refused.
func TestEventsToStdout(t *testing.T) {
	var runs fakeRuns
	a, stdout, stderr := testApp(t, runs.fake("good", "evidence", true))
	if err := runAll(context.Background(), &allOptions{app: a, Group: "evidence", Evidence: "evidence", control: control{Events: "-"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stdout.String(), `{"Time":`) || !strings.Contains(stdout.String(), `"Output":"CASE good PASS`) || stderr.Len() != 0 {
		t.Errorf("stdout %q, stderr %q; want the events on stdout, holding the CASE line, and nothing on stderr", stdout.String(), stderr.String())
	}
	err := runRun(context.Background(), &runOptions{app: a, Names: []string{"good"}, JSON: "-", control: control{Events: "-"}})
	if code, errText := outcome(err, stderr); code != exitError || !strings.Contains(errText, "would both write to stdout") {
		t.Errorf("exit %d: %s", code, errText)
	}
}

// TestListAndDiffJSON: list --json and diff --json print JSON a script
// can read; diff --json still exits 1 on a difference.
func TestListAndDiffJSON(t *testing.T) {
	var runs fakeRuns
	a, stdout, stderr := testApp(t, runs.fake("good", "evidence", true), runs.fake("other", "robustness", true))
	root := newRootCmd(a)
	root.SetArgs([]string{"list", "--json"})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	var list []struct{ Group, Name, Doc string }
	if err := json.Unmarshal(stdout.Bytes(), &list); err != nil || len(list) != 2 || list[1].Name != "other" || list[1].Group != "robustness" {
		t.Errorf("list --json: %v %+v\n%s", err, list, stdout.String())
	}

	os.WriteFile("old.txt", []byte("CASE good PASS n==1\n1 passed, 0 failed\n"), 0o644)
	os.WriteFile("new.txt", []byte("CASE good PASS n==2\n1 passed, 0 failed\n"), 0o644)
	stdout.Reset()
	root = newRootCmd(a)
	root.SetArgs([]string{"diff", "--json", "old.txt", "new.txt"})
	code, errText := outcome(root.ExecuteContext(context.Background()), stderr)
	var d struct {
		Compared    int
		Differences []struct {
			Case, Change string
			Fields       []struct {
				Key      string
				Old, New *string
			}
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &d); err != nil {
		t.Fatalf("diff --json: %v\n%s", err, stdout.String())
	}
	if code != exitFailed || d.Compared != 1 || len(d.Differences) != 1 || d.Differences[0].Change != "changed" ||
		len(d.Differences[0].Fields) != 1 || *d.Differences[0].Fields[0].Old != "n==1" || *d.Differences[0].Fields[0].New != "n==2" {
		t.Errorf("diff --json: exit %d (%s), %+v", code, errText, d)
	}
}
