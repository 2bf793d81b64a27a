package timeline

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rpcbench/rpcbench/internal/scorecard"

	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/trace"
)

// ErrNoOutput is wrapped by Load's error when the directory has no
// output.txt, or one without CASE lines.
var ErrNoOutput = errors.New("not an evidence directory")

// Load reads the evidence directory dir: output.txt's CASE lines,
// env.txt, and for each scenario the server logs, client trace and notes
// in logs/. A directory that does not exist is an error wrapping
// fs.ErrNotExist; one without CASE lines an error wrapping ErrNoOutput.
// A log or trace that cannot be read, wholly or from some line on, is not
// an error: what was read is shown, and the Page's Warnings and the
// scenario's Problems say what was not.
func Load(dir string, o Options) (*Page, error) {
	o = o.withDefaults()
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("timeline: evidence directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("timeline: %s is a file, not an evidence directory", dir)
	}
	out := filepath.Join(dir, report.OutputFile)
	f, err := os.Open(out)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("timeline: %s has no %s: %w", dir, report.OutputFile, ErrNoOutput)
	}
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	lines, err := report.ReadOutput(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("timeline: %s: %w", out, err)
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("timeline: %s holds no CASE lines: %w", out, ErrNoOutput)
	}
	p := &Page{Dir: dir, Summary: report.Summary(lines)}
	if card, err := scorecard.Build(lines); err == nil {
		p.Scorecard = &card
	}
	if b, err := os.ReadFile(filepath.Join(dir, report.EnvFile)); err == nil {
		p.Env = string(b)
	}
	files, err := report.ReadLogs(filepath.Join(dir, report.LogsDir))
	if err != nil {
		p.Warnings = append(p.Warnings, err.Error())
	}
	seen := map[string]int{}
	for _, l := range lines {
		seen[l.Name]++
		s := newScenario(l, seen[l.Name])
		if s.Repeat == 0 {
			loadLogs(&s, files, o)
		}
		for _, pr := range s.Problems {
			p.Warnings = append(p.Warnings, s.Name+": "+pr)
		}
		if !l.Verdict.Agrees() {
			p.Failing++
		}
		p.Scenarios = append(p.Scenarios, s)
	}
	slices.SortStableFunc(p.Scenarios, func(a, b Scenario) int { return cmp.Compare(verdictRank(a.Verdict), verdictRank(b.Verdict)) })
	return p, nil
}

// verdictRank orders failing scenarios (FAIL and ERROR) first, then
// interrupted, then skipped ones (which did not pass either), then the
// findings (the violations a reader came for), then n/a, then those that
// passed.
func verdictRank(v string) int {
	switch v {
	case report.Pass.String():
		return 5
	case report.NotApplicable.String():
		return 4
	case report.Finding.String():
		return 3
	case report.Skipped.String():
		return 2
	case report.Interrupted.String():
		return 1
	default:
		return 0
	}
}

func newScenario(l report.Line, occurrence int) Scenario {
	s := Scenario{Name: l.Name, Verdict: l.Verdict.String(), Anchor: "case-" + anchorSafe(l.Name), Fields: []Field{}}
	if occurrence > 1 {
		s.Repeat = occurrence
		s.Anchor += "-" + strconv.Itoa(occurrence)
	}
	for _, f := range l.Fields {
		if f.Key == report.WhyKey {
			s.Why = f.Value
			continue
		}
		if f.Key == "crosstalk" {
			if n, err := strconv.Atoi(f.Value); err == nil && n > 0 {
				s.Crosstalk = n
			}
		}
		s.Fields = append(s.Fields, Field{Key: f.Key, Value: f.Value, Op: f.Kind.Op(), Kind: f.Kind.String()})
	}
	return s
}

// anchorSafe keeps letters, digits, '_' and '-'; scenario names are
// snake_case, so this changes nothing but a hand-edited output.txt.
func anchorSafe(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name)
}

// loadLogs reads s's server logs, trace and notes from files (the
// evidence's logs by name, report.ReadLogs) and builds its timeline.
func loadLogs(s *Scenario, files map[string][]byte, o Options) {
	for _, n := range []struct{ kind, file string }{
		{"no-server", report.NoServerNote(s.Name)},
		{"chaos", report.ChaosNote(s.Name)},
	} {
		if b, ok := files[n.file]; ok {
			s.NoteKind, s.Note = n.kind, string(b)
		}
	}
	var servers []serverLog
	for _, name := range serverLogNames(s.Name, files) {
		events, err := serverapi.ReadEvents(bytes.NewReader(files[name]))
		if err != nil {
			s.Problems = append(s.Problems, fmt.Sprintf("%s: %v (%d events before it are shown)", name, err, len(events)))
		}
		servers = append(servers, serverLog{Source: name, Events: events})
	}
	var attempts []trace.Record
	traceFile := report.TraceLog(s.Name)
	b, traced := files[traceFile]
	if traced {
		var err error
		if attempts, err = trace.Read(bytes.NewReader(b)); err != nil {
			s.Problems = append(s.Problems, fmt.Sprintf("%s: %v (%d attempts before it are shown)", traceFile, err, len(attempts)))
		}
	}
	if len(servers) == 0 && !traced {
		return
	}
	s.Timeline = build(servers, attempts, traced, o)
}

// serverLogNames returns name's server logs in the order the scenario
// started the servers: server-NAME.log, then server-NAME-2.log, ...
func serverLogNames(name string, files map[string][]byte) []string {
	type log struct {
		n    int
		file string
	}
	var found []log
	for f := range files {
		if n := report.ServerLogNumber(f, name); n > 0 {
			found = append(found, log{n, f})
		}
	}
	slices.SortFunc(found, func(a, b log) int { return cmp.Compare(a.n, b.n) })
	out := make([]string, len(found))
	for i, l := range found {
		out[i] = l.file
	}
	return out
}
