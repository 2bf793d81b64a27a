package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// commitRun writes one run into dir: lines, and logs by file name.
func commitRun(t *testing.T, dir string, fresh bool, lines []Line, logs map[string]string) {
	t.Helper()
	ev, err := CreateEvidence(dir, Env{GoVersion: "go-test"})
	if err != nil {
		t.Fatal(err)
	}
	ev.Fresh = fresh
	writeFiles(t, ev.LogDir(), logs)
	for _, l := range lines {
		if err := ev.Add(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := ev.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestKeepReproduced: a re-run keeps the line and logs of each case whose
// verdict and stable fields it reproduced, however its volatile fields
// and logs differ, and takes the new ones of a case that changed, of one
// whose logs are other files, and of every case when Fresh. env.txt says
// how many it kept.
func TestKeepReproduced(t *testing.T) {
	line := func(name, stable, volatile string) Line {
		return Line{Name: name, Verdict: Pass, Fields: []Field{{Key: "n", Value: stable}, {Key: "t", Value: volatile, Kind: Volatile}}}
	}
	first := []Line{line("same", "1", "3ms"), line("changed", "1", "3ms"), line("more_logs", "1", "3ms")}
	firstLogs := map[string]string{
		"server-same.log": "first", "trace-same.jsonl": "first\n", "server-changed.log": "first", "server-more_logs.log": "first",
		"server-same_other.log": "a case whose name starts like same's",
	}
	second := []Line{line("same", "1", "9ms"), line("changed", "2", "9ms"), line("more_logs", "1", "9ms")}
	secondLogs := map[string]string{
		"server-same.log": "second", "trace-same.jsonl": "second\n", "server-changed.log": "second", "server-more_logs.log": "second",
		"server-more_logs-2.log": "second",
	}
	for _, fresh := range []bool{false, true} {
		t.Run(fmt.Sprintf("fresh=%v", fresh), func(t *testing.T) {
			dir := t.TempDir()
			commitRun(t, dir, false, first, firstLogs)
			// Evidence from before logs were cut: a log left whole.
			writeFiles(t, filepath.Join(dir, LogsDir), map[string]string{"trace-same.jsonl": strings.Repeat(`{"a":1}`+"\n", MaxLogBytes/4)})
			commitRun(t, dir, fresh, second, secondLogs)
			out, err := os.ReadFile(filepath.Join(dir, OutputFile))
			if err != nil {
				t.Fatal(err)
			}
			want := "CASE same PASS n=1 t~=3ms\nCASE changed PASS n=2 t~=9ms\nCASE more_logs PASS n=1 t~=9ms\n3 passed, 0 failed\n"
			wantSame, wantKept := "first", "kept: 1 of 3 cases"
			if fresh {
				want = strings.Replace(want, "3ms", "9ms", 1)
				wantSame, wantKept = "second", ""
			}
			if diff := cmp.Diff(want, string(out)); diff != "" {
				t.Errorf("output.txt (-want +got):\n%s", diff)
			}
			logs, err := ReadLogs(filepath.Join(dir, LogsDir))
			if err != nil {
				t.Fatal(err)
			}
			for name, content := range map[string]string{"server-same.log": wantSame, "server-changed.log": "second", "server-more_logs.log": "second", "server-more_logs-2.log": "second"} {
				if b, ok := logs[name]; !ok || string(b) != content {
					t.Errorf("%s = %q (there: %v); want %q", name, b, ok, content)
				}
			}
			// A kept log is cut as a new one is: the first run wrote it
			// whole, loose in logs/ as evidence was before bundles (this
			// run's writer would have cut it).
			if b, ok := logs["trace-same.jsonl"]; !ok || len(b) > MaxLogBytes+200 {
				t.Errorf("trace-same.jsonl: %d bytes (there: %v); want it cut to about %d bytes", len(b), ok, MaxLogBytes)
			}
			if _, ok := logs["server-same_other.log"]; ok {
				t.Errorf("server-same_other.log, of no case of the second run, was kept")
			}
			// Each case's logs are in its bundle, and nothing is loose.
			if diff := cmp.Diff([]string{"changed.logs", "more_logs.logs", "same.logs"}, listDir(t, filepath.Join(dir, LogsDir))); diff != "" {
				t.Errorf("logs/ (-want +got):\n%s", diff)
			}
			env, _ := os.ReadFile(filepath.Join(dir, EnvFile))
			if got := strings.Contains(string(env), "kept: "); got != (wantKept != "") || !strings.Contains(string(env), wantKept) {
				t.Errorf("env.txt %q, want it to say %q", env, wantKept)
			}
		})
	}
}

// TestLogCase: a log file belongs to the case whose snake_case name
// follows its prefix, up to the first '-' or '.'.
func TestLogCase(t *testing.T) {
	for file, want := range map[string]string{
		ServerLog("a_b", 1):  "a_b",
		ServerLog("a_b", 3):  "a_b",
		TraceLog("a_b"):      "a_b",
		AdapterLog("a_b"):    "a_b",
		SUTLog("a_b"):        "a_b",
		SUTRecord("a_b"):     "a_b",
		NoServerNote("a_b"):  "a_b",
		ChaosNote("chaos_x"): "chaos_x",
		"README":             "",
		".hidden":            "",
	} {
		if got := LogCase(file); got != want {
			t.Errorf("LogCase(%q) = %q, want %q", file, got, want)
		}
	}
}

// TestCutLog: a log over the limit keeps its first and last lines, and
// one line between them counting what was left out, by event; the
// server's event reader returns that line as a LOG_CUT event and every
// other line as it was.
func TestCutLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "server-x.log")
	var b strings.Builder
	for i := range 1000 {
		name := serverapi.EventConnOpen
		if i%4 == 0 {
			name = serverapi.EventConnClosed
		}
		fmt.Fprintf(&b, `{"time":"2026-12-04T13:49:06.%06dZ","level":"INFO","msg":%q,"conn":%d,"remote":"127.0.0.1:1"}`+"\n", i, name, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	const limit = 8 << 10
	if cut, err := CutLog(path, limit); !cut || err != nil {
		t.Fatalf("CutLog = %v, %v; want a cut", cut, err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	var cut string
	for _, l := range lines {
		if strings.HasPrefix(l, serverapi.CutPrefix) {
			cut = l
		}
	}
	all := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if lines[0] != all[0] || lines[len(lines)-1] != all[len(all)-1] {
		t.Errorf("first or last line lost:\n%s\n%s", lines[0], lines[len(lines)-1])
	}
	left := len(all) - (len(lines) - 1)
	wantCut := fmt.Sprintf("#cut %d lines (", left)
	if !strings.HasPrefix(cut, wantCut) || !strings.Contains(cut, "CONN_OPEN=") || !strings.Contains(cut, " CONN_CLOSED=") {
		t.Errorf("cut line %q, want it to start %q and count CONN_OPEN and CONN_CLOSED", cut, wantCut)
	}
	if len(got) > limit+len(cut)+1 {
		t.Errorf("%d bytes left, more than the limit %d and the cut line", len(got), limit)
	}
	evs, err := serverapi.ReadEvents(strings.NewReader(string(got)))
	if err != nil || len(evs) != len(lines) {
		t.Fatalf("ReadEvents: %d events, %v; want %d", len(evs), err, len(lines))
	}
	n := 0
	for _, e := range evs {
		if e.Name == serverapi.EventCut {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d LOG_CUT events, want 1", n)
	}
	if cut, err := CutLog(path, limit*4); cut || err != nil {
		t.Errorf("CutLog of a file within its limit = %v, %v; want nothing cut", cut, err)
	}
	// Cut again under the same limit, which it exceeds by its cut line,
	// as a kept log is on the next run: nothing changes.
	if cut, err := CutLog(path, limit); cut || err != nil {
		t.Errorf("CutLog of a file cut already under its limit = %v, %v; want it left as it was", cut, err)
	}
	if again, _ := os.ReadFile(path); string(again) != string(got) {
		t.Errorf("a file cut already under its limit was changed")
	}
	// Cut under a smaller limit (a log an earlier writer cut under a
	// larger one), it is cut again, and its one cut line counts what
	// both cuts left out.
	if cut, err := CutLog(path, limit/2); !cut || err != nil {
		t.Fatalf("CutLog under a smaller limit = %v, %v; want a cut", cut, err)
	}
	again, _ := os.ReadFile(path)
	lines = strings.Split(strings.TrimSuffix(string(again), "\n"), "\n")
	var cuts []string
	for _, l := range lines {
		if strings.HasPrefix(l, serverapi.CutPrefix) {
			cuts = append(cuts, l)
		}
	}
	wantCut = fmt.Sprintf("#cut %d lines (", len(all)-(len(lines)-1))
	if len(cuts) != 1 || !strings.HasPrefix(cuts[0], wantCut) {
		t.Errorf("cut lines %q, want one starting %q", cuts, wantCut)
	}
	var opens, closes int
	fmt.Sscanf(cuts[0][strings.Index(cuts[0], "CONN_OPEN="):], "CONN_OPEN=%d CONN_CLOSED=%d", &opens, &closes)
	kept := strings.Count(string(again), serverapi.EventConnOpen) + strings.Count(string(again), serverapi.EventConnClosed) - 2
	if opens+closes+kept != len(all) || lines[0] != all[0] || lines[len(lines)-1] != all[len(all)-1] {
		t.Errorf("after a second cut: %d CONN_OPEN and %d CONN_CLOSED counted, %d kept, want %d in all, the first and last lines kept\n%s", opens, closes, kept, len(all), again)
	}
	if len(again) > limit/2+len(cuts[0])+1 {
		t.Errorf("%d bytes left, more than the limit %d and the cut line", len(again), limit/2)
	}
}
