package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"slices"
)

// The JUnit XML WriteJUnit writes, in the form CI dashboards read
// (Jenkins, GitLab, GitHub's test reporters): one testsuite per group, one
// testcase per scenario and pass.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name      string      `xml:"name,attr"`
		Tests     int         `xml:"tests,attr"`
		Failures  int         `xml:"failures,attr"`
		Errors    int         `xml:"errors,attr"`
		Skipped   int         `xml:"skipped,attr"`
		Time      string      `xml:"time,attr"`
		Timestamp string      `xml:"timestamp,attr,omitempty"`
		Cases     []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *junitMessage `xml:"failure,omitempty"`
		Skipped   *junitMessage `xml:"skipped,omitempty"`
		SystemOut string        `xml:"system-out"`
	}
	junitMessage struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr,omitempty"`
		Text    string `xml:",chardata"`
	}
)

func secs(ms float64) string { return fmt.Sprintf("%.3f", ms/1000) }

// WriteJUnit writes results as JUnit XML: one testsuite per group, in
// order of first appearance, one testcase per scenario and pass (named
// "NAME#K" for pass K > 1 of a --count run). A failed or timed-out
// scenario is a failure whose message is its why; an interrupted or
// skipped one is <skipped> with its why as the message. Each testcase's
// system-out is its CASE line.
func WriteJUnit(w io.Writer, info RunInfo, results []Result) error {
	doc := junitSuites{Name: "rpcbench", Time: secs(ms(info.End.Sub(info.Start)))}
	var groups []string
	for _, r := range results {
		if !slices.Contains(groups, r.Group) {
			groups = append(groups, r.Group)
		}
	}
	for _, g := range groups {
		s := junitSuite{Name: g}
		var total float64
		for _, r := range results {
			if r.Group != g {
				continue
			}
			name := r.Name
			if r.PassIndex > 1 {
				name = fmt.Sprintf("%s#%d", r.Name, r.PassIndex)
			}
			c := junitCase{Name: name, Classname: "rpcbench." + g, Time: secs(ms(r.Duration)), SystemOut: Format(r.Line)}
			switch r.Status() {
			case "fail", "timeout":
				c.Failure = &junitMessage{Message: r.Why(), Type: r.Status(), Text: Format(r.Line)}
				s.Failures++
			case "interrupted", "skip":
				c.Skipped = &junitMessage{Message: r.Why()}
				s.Skipped++
			}
			if s.Timestamp == "" {
				s.Timestamp = stamp(r.Start)
			}
			total += ms(r.Duration)
			s.Cases = append(s.Cases, c)
			s.Tests++
		}
		s.Time = secs(total)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Suites = append(doc.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("report: write junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("report: write junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}
