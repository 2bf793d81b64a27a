package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"
)

// TestEvent is one event of the stream `go test -json` writes, as
// `go doc cmd/test2json` documents it, so that the tools that read test
// runs (gotestsum, tparse, go-junit-report) read rpcbench runs too.
type TestEvent struct {
	Time    time.Time `json:",omitempty"`
	Action  string
	Package string  `json:",omitempty"`
	Test    string  `json:",omitempty"`
	Elapsed float64 `json:",omitempty"` // seconds
	Output  string  `json:",omitempty"`
}

// EventPackage is the package name a group's events carry.
func EventPackage(group string) string { return "rpcbench/" + group }

// EventStream writes a run as test events while it runs: each group is
// a package, each scenario a test.
type EventStream struct {
	enc     *json.Encoder
	started []string
	results map[string][]Result
	start   map[string]time.Time
	err     error
}

// NewEventStream returns a stream writing to w.
func NewEventStream(w io.Writer) *EventStream {
	return &EventStream{enc: json.NewEncoder(w), results: map[string][]Result{}, start: map[string]time.Time{}}
}

func (s *EventStream) emit(e TestEvent) {
	if s.err == nil {
		if err := s.enc.Encode(e); err != nil {
			s.err = fmt.Errorf("report: write events: %w", err)
		}
	}
}

// Begin reports that a scenario of group starts.
func (s *EventStream) Begin(group, name string, at time.Time) {
	pkg := EventPackage(group)
	if !slices.Contains(s.started, group) {
		s.started = append(s.started, group)
		s.start[group] = at
		s.emit(TestEvent{Time: at, Action: "start", Package: pkg})
	}
	s.emit(TestEvent{Time: at, Action: "run", Package: pkg, Test: name})
}

// End reports a scenario's result: its CASE line as output, then pass
// (PASS, and FINDING, whose line says FINDING), fail (FAIL and ERROR), or
// skip (for SKIP and N/A, and for INTERRUPTED, which go test has no
// action for).
func (s *EventStream) End(r Result) {
	pkg := EventPackage(r.Group)
	at := r.Start.Add(r.Duration)
	s.emit(TestEvent{Time: at, Action: "output", Package: pkg, Test: r.Name, Output: Format(r.Line) + "\n"})
	action := "pass"
	switch r.Status() {
	case "fail", "timeout", "error":
		action = "fail"
	case "interrupted", "skip", "n/a":
		action = "skip"
	}
	s.emit(TestEvent{Time: at, Action: action, Package: pkg, Test: r.Name, Elapsed: r.Duration.Seconds()})
	s.results[r.Group] = append(s.results[r.Group], r)
}

// Close ends every package that started: its summary as output, then
// fail when any of its scenarios failed, ended in ERROR or was
// interrupted, else pass (findings and n/a included) (as
// go test passes a package whose tests skipped), and returns the first
// write error.
func (s *EventStream) Close(at time.Time) error {
	for _, g := range s.started {
		rs := s.results[g]
		lines := make([]Line, len(rs))
		failed := false
		for i, r := range rs {
			lines[i] = r.Line
			failed = failed || r.Failed() || r.Verdict == Interrupted
		}
		pkg := EventPackage(g)
		s.emit(TestEvent{Time: at, Action: "output", Package: pkg, Output: Summary(lines) + "\n"})
		action := "pass"
		if failed {
			action = "fail"
		}
		s.emit(TestEvent{Time: at, Action: action, Package: pkg, Elapsed: at.Sub(s.start[g]).Seconds()})
	}
	return s.err
}
