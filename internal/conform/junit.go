package conform

import (
	"encoding/xml"
	"fmt"
	"io"
	"time"

	"github.com/rpcbench/rpcbench/internal/report"
)

// JUnitSuite is the name of the one test suite WriteJUnit writes.
const JUnitSuite = "conform"

// The JUnit XML elements WriteJUnit writes: the subset that CI systems
// (Jenkins, GitLab, GitHub test reporters) read.
type (
	junitSuites struct {
		XMLName xml.Name     `xml:"testsuites"`
		Suites  []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name       string          `xml:"name,attr"`
		Tests      int             `xml:"tests,attr"`
		Failures   int             `xml:"failures,attr"`
		Errors     int             `xml:"errors,attr"`
		Time       string          `xml:"time,attr"`
		Properties []junitProperty `xml:"properties>property"`
		Cases      []junitCase     `xml:"testcase"`
	}
	junitProperty struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *junitFailure `xml:"failure"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	junitFailure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

// WriteJUnit writes res as JUnit XML: one testsuite named JUnitSuite with
// a property for the address and one for the run's tag, and one testcase
// per check. A failed check has a failure whose message is its detail; a
// passed one keeps its detail as system-out.
func WriteJUnit(w io.Writer, res Result) error {
	suite := junitSuite{
		Name:     JUnitSuite,
		Tests:    len(res.Checks),
		Failures: res.Failed(),
		Properties: []junitProperty{
			{Name: "addr", Value: res.Addr},
			{Name: "tag", Value: res.Tag},
		},
	}
	var total time.Duration
	for _, c := range res.Checks {
		total += c.Elapsed
		tc := junitCase{Name: c.Name, Classname: JUnitSuite, Time: seconds(c.Elapsed)}
		if c.Verdict == report.Pass {
			tc.SystemOut = c.Detail
		} else {
			tc.Failure = &junitFailure{Message: c.Detail, Type: c.Verdict.String(), Text: c.Line()}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	suite.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("conform: junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{suite}}); err != nil {
		return fmt.Errorf("conform: junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("conform: junit: %w", err)
	}
	return nil
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
