package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func sampleResults() (RunInfo, []Result) {
	t0 := time.Date(2026, 12, 1, 3, 4, 5, 0, time.UTC)
	return RunInfo{Start: t0, End: t0.Add(3 * time.Second)}, []Result{
		{Line: Line{Name: "a", Verdict: Pass}, Group: "evidence", Start: t0, Duration: time.Second, PassIndex: 1},
		{Line: Line{Name: "b", Fields: []Field{{Key: "x", Value: "1", Kind: Asserted}, {Key: "why", Value: "x=1, want 2"}}},
			Group: "evidence", Start: t0.Add(time.Second), Duration: time.Second, PassIndex: 1},
		{Line: Line{Name: "c", Verdict: Interrupted, Fields: []Field{{Key: "why", Value: "interrupted: signal"}}},
			Group: "robustness", Start: t0.Add(2 * time.Second), Duration: time.Second, PassIndex: 1},
		{Line: Line{Name: "a", Verdict: Pass}, Group: "evidence", Start: t0.Add(2 * time.Second), Duration: time.Second, PassIndex: 2},
		{Line: Skip("d", "nethost: not running as root"), Group: "network", Start: t0.Add(3 * time.Second), PassIndex: 1},
	}
}

// TestWriteJUnit parses the XML back: one suite per group, one case per
// scenario and pass, a failing scenario a failure carrying its why, an
// interrupted or skipped one <skipped> carrying its why.
func TestWriteJUnit(t *testing.T) {
	info, results := sampleResults()
	var b bytes.Buffer
	if err := WriteJUnit(&b, info, results); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name    string `xml:"name,attr"`
			Tests   int    `xml:"tests,attr"`
			Skipped int    `xml:"skipped,attr"`
			Cases   []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
				SystemOut string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b.String())
	}
	type row struct{ Suite, Case, Failure, Out string }
	var got []row
	skipped := map[string]int{}
	for _, s := range doc.Suites {
		skipped[s.Name] = s.Skipped
		for _, c := range s.Cases {
			r := row{Suite: s.Name, Case: c.Name, Out: c.SystemOut}
			if c.Failure != nil {
				r.Failure = "failure: " + c.Failure.Message
			}
			if c.Skipped != nil {
				r.Failure = "skipped: " + c.Skipped.Message
			}
			got = append(got, r)
		}
	}
	want := []row{
		{"evidence", "a", "", "CASE a PASS"},
		{"evidence", "b", "failure: x=1, want 2", "CASE b FAIL x==1 why=[x=1, want 2]"},
		{"evidence", "a#2", "", "CASE a PASS"},
		{"robustness", "c", "skipped: interrupted: signal", "CASE c INTERRUPTED why=[interrupted: signal]"},
		{"network", "d", "skipped: nethost: not running as root", "CASE d SKIP why=[nethost: not running as root]"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("testcases (-want +got):\n%s", diff)
	}
	if doc.Tests != 5 || doc.Failures != 1 {
		t.Errorf("totals: %d tests, %d failures; want 5, 1", doc.Tests, doc.Failures)
	}
	if diff := cmp.Diff(map[string]int{"evidence": 0, "robustness": 1, "network": 1}, skipped); diff != "" {
		t.Errorf("skipped per suite (-want +got):\n%s", diff)
	}
}

// TestEventStream decodes the stream with the event struct `go doc
// cmd/test2json` documents and checks the sequence a reader of go test
// -json expects: start, run, output, pass|fail|skip per test, then each
// package's output and result: fail when a test failed or was
// interrupted, pass when its tests passed or skipped.
func TestEventStream(t *testing.T) {
	_, results := sampleResults()
	var b bytes.Buffer
	s := NewEventStream(&b)
	for _, r := range results {
		s.Begin(r.Group, r.Name, r.Start)
		s.End(r)
	}
	if err := s.Close(results[len(results)-1].Start.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	// The struct of `go doc cmd/test2json`.
	type TestEvent struct {
		Time    time.Time
		Action  string
		Package string
		Test    string
		Elapsed float64
		Output  string
	}
	dec := json.NewDecoder(&b)
	var got []string
	for dec.More() {
		var e TestEvent
		if err := dec.Decode(&e); err != nil {
			t.Fatal(err)
		}
		if e.Time.IsZero() {
			t.Errorf("event without a time: %+v", e)
		}
		got = append(got, e.Action+" "+e.Package+" "+e.Test)
	}
	want := []string{
		"start rpcbench/evidence ", "run rpcbench/evidence a", "output rpcbench/evidence a", "pass rpcbench/evidence a",
		"run rpcbench/evidence b", "output rpcbench/evidence b", "fail rpcbench/evidence b",
		"start rpcbench/robustness ", "run rpcbench/robustness c", "output rpcbench/robustness c", "skip rpcbench/robustness c",
		"run rpcbench/evidence a", "output rpcbench/evidence a", "pass rpcbench/evidence a",
		"start rpcbench/network ", "run rpcbench/network d", "output rpcbench/network d", "skip rpcbench/network d",
		"output rpcbench/evidence ", "fail rpcbench/evidence ",
		"output rpcbench/robustness ", "fail rpcbench/robustness ",
		"output rpcbench/network ", "pass rpcbench/network ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestEncodeJUnitShapes pins what the document's options change in the
// XML, which a reader parsing it back would not notice: a nameless
// document's bare <testsuites>, the skipped count only on a Skippable
// suite, <properties> and <system-out> only when there are some.
func TestEncodeJUnitShapes(t *testing.T) {
	c := JUnitCase{Name: "c", Classname: "k", Time: 0.25}
	tests := []struct {
		name string
		doc  JUnit
		want string
	}{
		{"named", JUnit{Name: "run", Time: 1, Suites: []JUnitSuite{{Name: "s", Skippable: true, Cases: []JUnitCase{c}}}},
			`<testsuites name="run" tests="1" failures="0" errors="0" time="1.000">` + "\n" +
				`  <testsuite name="s" tests="1" failures="0" errors="0" skipped="0" time="0.000">` + "\n" +
				`    <testcase name="c" classname="k" time="0.250"></testcase>`},
		{"bare", JUnit{Time: 1, Suites: []JUnitSuite{{Name: "s", Properties: []JUnitProperty{{"a", "b"}}, Cases: []JUnitCase{c}}}},
			"<testsuites>\n" +
				`  <testsuite name="s" tests="1" failures="0" errors="0" time="0.000">` + "\n" +
				"    <properties>\n" +
				`      <property name="a" value="b"></property>` + "\n" +
				"    </properties>\n" +
				`    <testcase name="c" classname="k" time="0.250"></testcase>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := EncodeJUnit(&b, tt.doc); err != nil {
				t.Fatal(err)
			}
			got := b.String()
			if !strings.HasPrefix(got, xml.Header+tt.want+"\n") || !strings.HasSuffix(got, "</testsuites>\n") {
				t.Errorf("got\n%s\nwant it to start\n%s%s", got, xml.Header, tt.want)
			}
		})
	}
}

// TestWriteJUnitError: an ERROR case is an <error>, counted in the
// suite's and the document's errors, not in their failures.
func TestWriteJUnitError(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 3, 4, 5, 0, time.UTC)
	results := []Result{
		{Line: Line{Name: "e", Verdict: Error, Fields: []Field{{Key: "why", Value: "adapter grpc-go exited"}}}, Group: "grpc", Start: t0, PassIndex: 1},
		{Line: Line{Name: "f", Verdict: Pass}, Group: "grpc", Start: t0, PassIndex: 1},
	}
	var b bytes.Buffer
	if err := WriteJUnit(&b, RunInfo{Start: t0, End: t0}, results); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suites   []struct {
			Failures int `xml:"failures,attr"`
			Errors   int `xml:"errors,attr"`
			Cases    []struct {
				Name  string `xml:"name,attr"`
				Error *struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
				} `xml:"error"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b.String())
	}
	if doc.Errors != 1 || doc.Failures != 0 || len(doc.Suites) != 1 || doc.Suites[0].Errors != 1 || doc.Suites[0].Failures != 0 {
		t.Fatalf("errors/failures: document %d/%d, suites %+v; want 1/0 each\n%s", doc.Errors, doc.Failures, doc.Suites, b.String())
	}
	c := doc.Suites[0].Cases[0]
	if c.Error == nil || c.Failure != nil || c.Error.Message != "adapter grpc-go exited" || c.Error.Type != "error" {
		t.Errorf("case e: %+v, want an <error> of type error with the why, and no <failure>\n%s", c, b.String())
	}
}

// TestEventActions: each verdict a CASE line may carry becomes the go
// test action a CI reader acts on. An ERROR is a fail (rpcbench could not
// establish what happened), a FINDING a pass whose output says FINDING,
// an N/A a skip; a package fails only when a test failed, ended in ERROR
// or was interrupted.
func TestEventActions(t *testing.T) {
	tests := []struct {
		verdict Verdict
		test    string
		pkg     string
	}{
		{Pass, "pass", "pass"},
		{Finding, "pass", "pass"},
		{NotApplicable, "skip", "pass"},
		{Skipped, "skip", "pass"},
		{Interrupted, "skip", "fail"},
		{Fail, "fail", "fail"},
		{Error, "fail", "fail"},
	}
	t0 := time.Date(2026, 12, 1, 3, 4, 5, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.verdict.String(), func(t *testing.T) {
			var b bytes.Buffer
			s := NewEventStream(&b)
			r := Result{Line: Line{Name: "c", Verdict: tt.verdict}, Group: "grpc", Start: t0}
			s.Begin(r.Group, r.Name, r.Start)
			s.End(r)
			if err := s.Close(t0.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			var test, pkg, out string
			dec := json.NewDecoder(&b)
			for dec.More() {
				var e TestEvent
				if err := dec.Decode(&e); err != nil {
					t.Fatal(err)
				}
				switch {
				case e.Action == "output" && e.Test == "c":
					out = e.Output
				case e.Action != "output" && e.Action != "run" && e.Action != "start" && e.Test == "c":
					test = e.Action
				case e.Action != "output" && e.Action != "start" && e.Test == "":
					pkg = e.Action
				}
			}
			if test != tt.test || pkg != tt.pkg {
				t.Errorf("test action %q, package action %q; want %q, %q", test, pkg, tt.test, tt.pkg)
			}
			if !strings.Contains(out, " "+tt.verdict.String()) {
				t.Errorf("output %q does not carry the verdict %s", out, tt.verdict)
			}
		})
	}
}
