package conform

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/report"
)

// The JUnit schema as a CI reader sees it, declared apart from the
// writer's types so that the test reads what was written, not what the
// writer meant.
type (
	xmlSuites struct {
		XMLName xml.Name   `xml:"testsuites"`
		Suites  []xmlSuite `xml:"testsuite"`
	}
	xmlSuite struct {
		Name     string    `xml:"name,attr"`
		Tests    int       `xml:"tests,attr"`
		Failures int       `xml:"failures,attr"`
		Errors   int       `xml:"errors,attr"`
		Props    []xmlProp `xml:"properties>property"`
		Cases    []xmlCase `xml:"testcase"`
	}
	xmlProp struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	xmlCase struct {
		Name      string      `xml:"name,attr"`
		Classname string      `xml:"classname,attr"`
		Time      string      `xml:"time,attr"`
		Failure   *xmlFailure `xml:"failure"`
		SystemOut string      `xml:"system-out"`
	}
	xmlFailure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

func TestWriteJUnit(t *testing.T) {
	res := Result{Addr: "127.0.0.1:9", Tag: "cf-00000000", Checks: []Check{
		{Name: "framing_byte_by_byte", Verdict: report.Pass, Detail: "writes=54 balance=1000", Elapsed: 1500 * time.Microsecond},
		{Name: "idempotent_replay", Verdict: report.Fail, Detail: `secondReplayed=false, want true <&"> [balance=980]`, Elapsed: 2 * time.Second},
	}}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), xml.Header) {
		t.Errorf("output starts %q, want the XML header", buf.String()[:min(40, buf.Len())])
	}
	var got xmlSuites
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v in\n%s", err, buf.String())
	}
	want := xmlSuites{
		XMLName: xml.Name{Local: "testsuites"},
		Suites: []xmlSuite{{
			Name: "conform", Tests: 2, Failures: 1,
			Props: []xmlProp{{"addr", "127.0.0.1:9"}, {"tag", "cf-00000000"}},
			Cases: []xmlCase{
				{Name: "framing_byte_by_byte", Classname: "conform", Time: "0.002", SystemOut: "writes=54 balance=1000"},
				{Name: "idempotent_replay", Classname: "conform", Time: "2.000", Failure: &xmlFailure{
					Message: `secondReplayed=false, want true <&"> [balance=980]`,
					Type:    "FAIL",
					Text:    `CHECK idempotent_replay FAIL secondReplayed=false, want true <&"> [balance=980]`,
				}},
			},
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JUnit (-want +got):\n%s\n%s", diff, buf.String())
	}
}
