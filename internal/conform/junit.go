package conform

import (
	"fmt"
	"io"
	"time"

	"github.com/rpcbench/rpcbench/internal/report"
)

// JUnitSuite is the name of the one test suite WriteJUnit writes.
const JUnitSuite = "conform"

// WriteJUnit writes res as JUnit XML with report.EncodeJUnit: one
// testsuite named JUnitSuite with a property for the address and one for
// the run's tag, and one testcase per check. A failed check has a failure
// whose message is its detail; a passed one keeps its detail as
// system-out.
func WriteJUnit(w io.Writer, res Result) error {
	if err := report.EncodeJUnit(w, res.junit()); err != nil {
		return fmt.Errorf("conform: junit: %w", err)
	}
	return nil
}

// junit is the document WriteJUnit writes: a bare <testsuites>, and no
// skipped count, since a check is never skipped.
func (r Result) junit() report.JUnit {
	suite := report.JUnitSuite{
		Name: JUnitSuite,
		Properties: []report.JUnitProperty{
			{Name: "addr", Value: r.Addr},
			{Name: "tag", Value: r.Tag},
		},
	}
	var total time.Duration
	for _, c := range r.Checks {
		total += c.Elapsed
		tc := report.JUnitCase{Name: c.Name, Classname: JUnitSuite, Time: c.Elapsed.Seconds()}
		if c.Verdict == report.Pass {
			tc.SystemOut = c.Detail
		} else {
			tc.Failure = &report.JUnitMessage{Message: c.Detail, Type: c.Verdict.String(), Text: c.Line()}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	suite.Time = total.Seconds()
	return report.JUnit{Suites: []report.JUnitSuite{suite}}
}
