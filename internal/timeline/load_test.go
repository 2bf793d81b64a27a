package timeline

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rpcbench/rpcbench/internal/report"
)

// writeTree creates files (path relative to dir: content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// listenAttrs are the keys every LISTEN event has.
const listenAttrs = `,"addr":"127.0.0.1:1","config":"workers=1"`

func logLine(ts, msg, rest string) string {
	return `{"time":"2026-12-01T02:35:` + ts + `Z","level":"INFO","msg":"` + msg + `"` + rest + "}\n"
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"output.txt": "CASE ok_one PASS a==1 b<=2 c>=3 d~=4ms e=5\n" +
			"CASE bad_one FAIL why=[b=3, want 2] b==3\n" +
			"CASE stopped INTERRUPTED why=[interrupt received]\n" +
			"CASE no_root SKIP why=[nethost: not running as root]\n" +
			"CASE crossed PASS crosstalk=2\n" +
			"CASE nolog PASS\n" +
			"CASE ok_one PASS a==1\n" +
			"4 passed, 1 failed, 1 interrupted, 1 skipped\n",
		"env.txt": "go: go1.26.8\n",
		// Logs in the wrong order on disk; -10 after -2.
		"logs/server-ok_one.log":    logLine("00.000", "LISTEN", listenAttrs),
		"logs/server-ok_one-10.log": logLine("00.003", "LISTEN", listenAttrs),
		"logs/server-ok_one-2.log":  logLine("00.002", "LISTEN", listenAttrs),
		// Not ok_one's: another name, and not a number.
		"logs/server-ok_one-x.log":          logLine("00.002", "LISTEN", listenAttrs),
		"logs/server-ok_one_two.log":        logLine("00.002", "LISTEN", listenAttrs),
		"logs/trace-ok_one.jsonl":           traceLine1 + "\n",
		"logs/server-bad_one.log":           logLine("00.000", "LISTEN", listenAttrs) + "not json\n" + logLine("00.001", "SIGNAL", `,"signal":"terminated"`),
		"logs/trace-bad_one.jsonl":          traceLine1 + "\n{\"client\":1}\n",
		"logs/server-crossed.log":           logLine("00.000", "LISTEN", listenAttrs),
		"logs/server-stopped.no-server.txt": "stopped starts no rpcserver\n",
		// No server, but a client that tried to reach one.
		"logs/trace-stopped.jsonl": strings.Replace(traceLine1, `"client":1`, `"client":4`, 1) + "\n",
	})
	p, err := Load(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, s := range p.Scenarios {
		order = append(order, s.Verdict+" "+s.Anchor)
	}
	if diff := cmp.Diff([]string{"FAIL case-bad_one", "INTERRUPTED case-stopped", "SKIP case-no_root", "PASS case-ok_one", "PASS case-crossed", "PASS case-nolog", "PASS case-ok_one-2"}, order); diff != "" {
		t.Errorf("scenario order (-want +got):\n%s", diff)
	}
	if p.Summary != "4 passed, 1 failed, 1 interrupted, 1 skipped" || p.Failing != 3 || p.Env != "go: go1.26.8\n" || p.Timelines() != 4 {
		t.Errorf("summary %q failing %d env %q timelines %d", p.Summary, p.Failing, p.Env, p.Timelines())
	}
	byAnchor := map[string]Scenario{}
	for _, s := range p.Scenarios {
		byAnchor[s.Anchor] = s
	}

	// A skipped scenario did not run: its why says what is missing, and
	// it has no logs and no timeline.
	if s := byAnchor["case-no_root"]; s.Why != "nethost: not running as root" || s.Timeline != nil || len(s.Problems) != 0 {
		t.Errorf("no_root: why %q, timeline %v, problems %q; want the reason, no timeline, no problems", s.Why, s.Timeline, s.Problems)
	}

	ok := byAnchor["case-ok_one"]
	wantFields := []Field{
		{"a", "1", "==", "asserted"}, {"b", "2", "<=", "bound"}, {"c", "3", ">=", "lower-bound"},
		{"d", "4ms", "~=", "volatile"}, {"e", "5", "=", "recorded"},
	}
	if diff := cmp.Diff(wantFields, ok.Fields); diff != "" {
		t.Errorf("ok_one's fields (-want +got):\n%s", diff)
	}
	var sources []string
	for _, l := range ok.Timeline.Lanes {
		sources = append(sources, l.Source)
	}
	if diff := cmp.Diff([]string{"server-ok_one.log", "server-ok_one-2.log", "server-ok_one-10.log", ""}, sources); diff != "" {
		t.Errorf("ok_one's lanes (-want +got):\n%s", diff)
	}
	if !ok.Timeline.Traced || ok.Timeline.Attempts != 1 {
		t.Errorf("ok_one: traced %v, %d attempts; want its trace", ok.Timeline.Traced, ok.Timeline.Attempts)
	}
	if again := byAnchor["case-ok_one-2"]; again.Repeat != 2 || again.Timeline != nil {
		t.Errorf("second ok_one: repeat %d, timeline %v; want 2 and none", again.Repeat, again.Timeline)
	}

	bad := byAnchor["case-bad_one"]
	if bad.Why != "b=3, want 2" || len(bad.Fields) != 1 {
		t.Errorf("bad_one: why %q, fields %v; want the why apart", bad.Why, bad.Fields)
	}
	if bad.Timeline == nil || bad.Timeline.Events != 1 || bad.Timeline.Attempts != 1 {
		t.Fatalf("bad_one's timeline %+v, want the event and the attempt before the bad lines", bad.Timeline)
	}
	if len(bad.Problems) != 2 || !strings.Contains(bad.Problems[0], "server-bad_one.log: serverapi: log line 2") ||
		!strings.Contains(bad.Problems[1], "trace-bad_one.jsonl: trace: line 2: missing") {
		t.Errorf("bad_one's problems %q", bad.Problems)
	}
	if len(p.Warnings) != 2 || !strings.HasPrefix(p.Warnings[0], "bad_one: server-bad_one.log") {
		t.Errorf("warnings %q", p.Warnings)
	}

	if s := byAnchor["case-stopped"]; s.NoteKind != "no-server" || s.Note != "stopped starts no rpcserver\n" ||
		s.Timeline == nil || len(s.Timeline.Lanes) != 1 || s.Timeline.Lanes[0].Name != "client 4" {
		t.Errorf("stopped: note %q %q, timeline %+v; want the note and client 4's lane alone", s.NoteKind, s.Note, s.Timeline)
	}
	if s := byAnchor["case-crossed"]; s.Crosstalk != 2 || s.Timeline == nil || s.Timeline.Traced {
		t.Errorf("crossed: crosstalk %d, timeline %+v; want 2 and an untraced timeline", s.Crosstalk, s.Timeline)
	}
	if s := byAnchor["case-nolog"]; s.Timeline != nil || s.NoteKind != "" {
		t.Errorf("nolog: timeline %v, note %q; want neither", s.Timeline, s.NoteKind)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"empty/output.txt":   "0 passed, 0 failed\n",
		"garbled/output.txt": "CASE x PASS a=[1\n",
		"file":               "",
		"nologs/output.txt":  "CASE x PASS\n",
	})
	if err := os.Mkdir(filepath.Join(dir, "bare"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		is      error
		wantErr string
	}{
		{"missing", fs.ErrNotExist, "no such file or directory"},
		{"bare", ErrNoOutput, "has no output.txt"},
		{"empty", ErrNoOutput, "holds no CASE lines"},
		{"garbled", nil, "no ']' matches"},
		{"file", nil, "is a file, not an evidence directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(filepath.Join(dir, tt.name), Options{})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Errorf("Load: %v, want an error containing %q (is %v)", err, tt.wantErr, tt.is)
			}
		})
	}
	// No logs/ at all: the fields, and no timeline.
	p, err := Load(filepath.Join(dir, "nologs"), Options{})
	if err != nil || len(p.Scenarios) != 1 || p.Scenarios[0].Timeline != nil || len(p.Warnings) != 0 {
		t.Errorf("nologs: %v, %+v", err, p)
	}
}

// TestVerdictOrder: failures first, the findings before n/a and passes,
// so that a reader meets a stack's violations before its passes.
func TestVerdictOrder(t *testing.T) {
	order := []report.Verdict{report.Fail, report.Interrupted, report.Skipped, report.Finding, report.NotApplicable, report.Pass}
	for i := 1; i < len(order); i++ {
		if a, b := verdictRank(order[i-1].String()), verdictRank(order[i].String()); a >= b {
			t.Errorf("%v ranks %d, %v ranks %d: want %v first", order[i-1], a, order[i], b, order[i-1])
		}
	}
	if verdictRank(report.Error.String()) != verdictRank(report.Fail.String()) {
		t.Errorf("ERROR and FAIL rank apart")
	}
}
