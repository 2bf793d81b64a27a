package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"time"
)

// JUnit is one JUnit XML document, in the form CI dashboards read
// (Jenkins, GitLab, GitHub's test reporters). EncodeJUnit writes it; it
// counts each suite's tests, failures and skipped cases itself, so they
// cannot disagree with the cases. Both of rpcbench's documents are one:
// WriteJUnit's of scenario results, and conform's of its checks.
type JUnit struct {
	// Name names the whole run. When it is not "", <testsuites> carries
	// it, Time and the totals of every suite as attributes; when it is "",
	// <testsuites> is a bare wrapper and Time is not written.
	Name string
	// Time is the run's duration in seconds, written to the millisecond.
	Time   float64
	Suites []JUnitSuite
}

// JUnitSuite is one <testsuite>.
type JUnitSuite struct {
	Name string
	// Time is the suite's duration in seconds, written to the millisecond.
	Time float64
	// Timestamp is when the suite started; the zero Time writes none.
	Timestamp time.Time
	// Skippable says the suite's cases can be skipped: it then carries a
	// skipped count, 0 included. A suite of cases that are never skipped
	// (conform's checks) carries none.
	Skippable  bool
	Properties []JUnitProperty
	Cases      []JUnitCase
}

// JUnitProperty is one <property> of a suite.
type JUnitProperty struct {
	Name, Value string
}

// JUnitCase is one <testcase>: a failure when Failure is set, an error
// when Error is, skipped when Skipped is, else passed.
type JUnitCase struct {
	Name, Classname string
	// Time is the case's duration in seconds, written to the millisecond.
	Time    float64
	Failure *JUnitMessage
	Error   *JUnitMessage
	Skipped *JUnitMessage
	// SystemOut is what the case printed; "" writes no <system-out>.
	SystemOut string
}

// JUnitMessage is the <failure>, <error> or <skipped> element of a case.
type JUnitMessage struct {
	// Message is the one-line reason.
	Message string
	// Type is the kind of failure; "" writes none.
	Type string
	// Text is the element's content: the full result.
	Text string
}

// The XML elements EncodeJUnit writes, attributes in the order written.
type (
	junitSuitesXML struct {
		XMLName  xml.Name        `xml:"testsuites"`
		Name     string          `xml:"name,attr,omitempty"`
		Tests    *int            `xml:"tests,attr,omitempty"`
		Failures *int            `xml:"failures,attr,omitempty"`
		Errors   *int            `xml:"errors,attr,omitempty"`
		Time     string          `xml:"time,attr,omitempty"`
		Suites   []junitSuiteXML `xml:"testsuite"`
	}
	junitSuiteXML struct {
		Name       string              `xml:"name,attr"`
		Tests      int                 `xml:"tests,attr"`
		Failures   int                 `xml:"failures,attr"`
		Errors     int                 `xml:"errors,attr"`
		Skipped    *int                `xml:"skipped,attr,omitempty"`
		Time       string              `xml:"time,attr"`
		Timestamp  string              `xml:"timestamp,attr,omitempty"`
		Properties *junitPropertiesXML `xml:"properties,omitempty"`
		Cases      []junitCaseXML      `xml:"testcase"`
	}
	junitPropertiesXML struct {
		Property []junitPropertyXML `xml:"property"`
	}
	junitPropertyXML struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitCaseXML struct {
		Name      string           `xml:"name,attr"`
		Classname string           `xml:"classname,attr"`
		Time      string           `xml:"time,attr"`
		Failure   *junitMessageXML `xml:"failure,omitempty"`
		Error     *junitMessageXML `xml:"error,omitempty"`
		Skipped   *junitMessageXML `xml:"skipped,omitempty"`
		SystemOut string           `xml:"system-out,omitempty"`
	}
	junitMessageXML struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr,omitempty"`
		Text    string `xml:",chardata"`
	}
)

// EncodeJUnit writes doc as JUnit XML: the XML header, the indented
// document and a newline. Its error is w's, unwrapped, for the caller
// to name the file.
func EncodeJUnit(w io.Writer, doc JUnit) error {
	out := junitSuitesXML{Name: doc.Name}
	var tests, failures, errors int
	for _, s := range doc.Suites {
		x := junitSuiteXML{Name: s.Name, Time: junitTime(s.Time), Timestamp: stamp(s.Timestamp)}
		if len(s.Properties) > 0 {
			x.Properties = &junitPropertiesXML{}
			for _, p := range s.Properties {
				x.Properties.Property = append(x.Properties.Property, junitPropertyXML(p))
			}
		}
		skipped := 0
		for _, c := range s.Cases {
			xc := junitCaseXML{Name: c.Name, Classname: c.Classname, Time: junitTime(c.Time), SystemOut: c.SystemOut}
			if c.Failure != nil {
				xc.Failure = (*junitMessageXML)(c.Failure)
				x.Failures++
			}
			if c.Error != nil {
				xc.Error = (*junitMessageXML)(c.Error)
				x.Errors++
			}
			if c.Skipped != nil {
				xc.Skipped = (*junitMessageXML)(c.Skipped)
				skipped++
			}
			x.Cases = append(x.Cases, xc)
			x.Tests++
		}
		if s.Skippable {
			x.Skipped = &skipped
		}
		tests += x.Tests
		failures += x.Failures
		errors += x.Errors
		out.Suites = append(out.Suites, x)
	}
	if doc.Name != "" {
		out.Tests, out.Failures, out.Errors = &tests, &failures, &errors
		out.Time = junitTime(doc.Time)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitTime writes seconds to the millisecond, as JUnit readers expect.
func junitTime(seconds float64) string { return fmt.Sprintf("%.3f", seconds) }

// WriteJUnit writes results as JUnit XML: one testsuite per group, in
// order of first appearance, one testcase per scenario and pass (named
// "NAME#K" for pass K > 1 of a --count run). A failed or timed-out
// scenario is a failure whose message is its why; an interrupted or
// skipped one is <skipped> with its why as the message. Each testcase's
// system-out is its CASE line.
func WriteJUnit(w io.Writer, info RunInfo, results []Result) error {
	if err := EncodeJUnit(w, junitOf(info, results)); err != nil {
		return fmt.Errorf("report: write junit: %w", err)
	}
	return nil
}

// junitOf is the document WriteJUnit writes.
func junitOf(info RunInfo, results []Result) JUnit {
	doc := JUnit{Name: "rpcbench", Time: ms(info.End.Sub(info.Start)) / 1000}
	var groups []string
	for _, r := range results {
		if !slices.Contains(groups, r.Group) {
			groups = append(groups, r.Group)
		}
	}
	for _, g := range groups {
		s := JUnitSuite{Name: g, Skippable: true}
		var total float64
		for _, r := range results {
			if r.Group != g {
				continue
			}
			name := r.Name
			if r.PassIndex > 1 {
				name = fmt.Sprintf("%s#%d", r.Name, r.PassIndex)
			}
			c := JUnitCase{Name: name, Classname: "rpcbench." + g, Time: ms(r.Duration) / 1000, SystemOut: Format(r.Line)}
			switch r.Status() {
			case "fail", "timeout":
				c.Failure = &JUnitMessage{Message: r.Why(), Type: r.Status(), Text: Format(r.Line)}
			case "error":
				c.Error = &JUnitMessage{Message: r.Why(), Type: r.Status(), Text: Format(r.Line)}
			case "interrupted", "skip":
				c.Skipped = &JUnitMessage{Message: r.Why()}
			case "n/a":
				c.Skipped = &JUnitMessage{Message: "n/a: " + r.Why()}
			}
			if s.Timestamp.IsZero() {
				s.Timestamp = r.Start
			}
			total += ms(r.Duration)
			s.Cases = append(s.Cases, c)
		}
		s.Time = total / 1000
		doc.Suites = append(doc.Suites, s)
	}
	return doc
}
