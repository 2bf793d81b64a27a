package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// reportFixture is an evidence directory of five scenarios: a failing
// one with two servers and a two-client trace, a passing one with a
// trace, one with a server log and no trace, one that starts no server
// and a chaos run.
const reportFixture = "testdata/report/evidence"

// fixtureDir returns reportFixture's absolute path; testApp changes the
// working directory.
func fixtureDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(reportFixture)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReportUsage(t *testing.T) {
	fixture := fixtureDir(t)
	tests := []struct {
		name    string
		args    []string
		setup   map[string]string // files to create first
		wantErr []string          // substrings of stderr
	}{
		{"no evidence directory", []string{"report"}, nil,
			[]string{"rpcbench: evidence directory evidence does not exist; run 'rpcbench all' first, or name one: rpcbench report DIR\n"}},
		{"named directory missing", []string{"report", "nope"}, nil, []string{"evidence directory nope does not exist"}},
		{"not an evidence directory", []string{"report", "logs"}, map[string]string{"logs/server-x.log": ""},
			[]string{"logs has no output.txt: not an evidence directory; an evidence directory holds the output.txt that 'rpcbench all' writes"}},
		{"output.txt without CASE lines", []string{"report", "ev"}, map[string]string{"ev/output.txt": "0 passed, 0 failed\n"}, []string{"holds no CASE lines"}},
		{"unknown flag", []string{"report", "--bogus"}, nil, []string{"unknown flag: --bogus", "rpcbench report [EVIDENCE_DIR] [flags]", "-o, --output string"}},
		{"two directories", []string{"report", "a", "b"}, nil, []string{"accepts at most 1 arg(s), received 2", "rpcbench report [EVIDENCE_DIR]"}},
		{"empty output", []string{"report", fixture, "-o", ""}, nil, []string{`--output is empty: name a file, or "-" for stdout`}},
		{"output flag without a value", []string{"report", fixture, "-o"}, nil, []string{"flag needs an argument: 'o' in -o"}},
		{"output in a missing directory", []string{"report", fixture, "-o", "no/such/dir/r.html"}, nil, []string{"rpcbench: -o no/such/dir/r.html: directory no/such/dir does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, stdout, _ := testApp(t)
			writeTree(t, tt.setup)
			code, stderr := command(a, tt.args...)
			if code != exitError {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, exitError, stderr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr =\n%s\nwant it to contain %q", stderr, want)
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
			if _, err := os.Stat("report.html"); err == nil {
				t.Errorf("report.html written despite the error")
			}
		})
	}
}

// TestReportPage: the fixture's page, as a file.
func TestReportPage(t *testing.T) {
	fixture := fixtureDir(t)
	a, stdout, _ := testApp(t)
	code, stderr := command(a, "report", fixture, "-o", "page.html")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "rpcbench: wrote page.html: 5 scenarios (1 did not run as pinned; 4 passed, 1 failed), 3 timelines\n"; stderr != want || stdout.Len() != 0 {
		t.Errorf("stderr %q, stdout %q; want %q and nothing", stderr, stdout.String(), want)
	}
	page := readFile(t, "page.html")
	if entries, _ := os.ReadDir("."); len(entries) != 1 {
		t.Errorf("directory holds %d files, want page.html alone (no temporary file left)", len(entries))
	}

	t.Run("self-contained", func(t *testing.T) {
		for _, url := range []string{"http://", "https://"} {
			if strings.Contains(page, url) {
				t.Errorf("page names %q", url)
			}
		}
		for _, m := range regexp.MustCompile(`(?i)\s(src|href)\s*=\s*"?([^"\s>]*)`).FindAllStringSubmatch(page, -1) {
			if m[1] == "src" || !strings.HasPrefix(m[2], "#") {
				t.Errorf("page loads or links to %s=%q", m[1], m[2])
			}
		}
	})
	t.Run("failing first", func(t *testing.T) {
		var order []string
		for _, m := range regexp.MustCompile(`<section class="case v-(\w+)" id="case-(\w+)"`).FindAllStringSubmatch(page, -1) {
			order = append(order, m[1]+" "+m[2])
		}
		want := []string{"FAIL crash_then_dedup", "PASS retry_with_key", "PASS fifo_crosstalk", "PASS in_process", "PASS chaos_seed1_memory"}
		if strings.Join(order, ", ") != strings.Join(want, ", ") {
			t.Errorf("sections %q, want %q", order, want)
		}
		if !strings.Contains(page, `<p class="why"><b>why:</b> balance=980, want 990: executed twice</p>`) {
			t.Errorf("the failing scenario's why is not shown")
		}
	})
	t.Run("escaped", func(t *testing.T) {
		if strings.Contains(page, "<script>document") {
			t.Errorf("a field value or trace error reached the page as markup")
		}
		if !strings.Contains(page, `<span class="val">&lt;script&gt;document.body.setAttribute(&#39;data-pwned&#39;,&#39;1&#39;)&lt;/script&gt;</span>`) {
			t.Errorf("the <script> field value is not shown as text")
		}
	})
	t.Run("timelines", func(t *testing.T) {
		attempts := regexp.MustCompile(`<div class="timeline" data-case="(\w+)" data-attempts="(\d+)"`).FindAllStringSubmatch(page, -1)
		var got []string
		for _, m := range attempts {
			got = append(got, m[1]+"="+m[2])
		}
		if want := "crash_then_dedup=3 retry_with_key=2 fifo_crosstalk=0"; strings.Join(got, " ") != want {
			t.Errorf("timelines %q, want %s", got, want)
		}
		for _, want := range []string{
			"no client trace recorded: server lanes only",
			"<b>crosstalk:</b> 1 answer(s)",
			"No timeline: this scenario starts no server",
			"No timeline: a chaos run keeps its server logs",
			"CHAOS seed=1 ops=11811",
		} {
			if !strings.Contains(page, want) {
				t.Errorf("page lacks %q", want)
			}
		}
	})
}

func TestReportStdout(t *testing.T) {
	fixture := fixtureDir(t)
	a, stdout, _ := testApp(t)
	code, stderr := command(a, "report", fixture, "-o", "-")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, stderr)
	}
	if !strings.HasPrefix(stdout.String(), "<!DOCTYPE html>") || !strings.HasSuffix(stdout.String(), "</html>\n") {
		t.Errorf("stdout is not the page: %.80q", stdout.String())
	}
}

// TestReportUnreadableLog: a log that breaks off is shown as far as it
// reads, and named on stderr and on the page; the page is still written.
func TestReportUnreadableLog(t *testing.T) {
	a, _, _ := testApp(t)
	writeTree(t, map[string]string{
		"evidence/output.txt":        "CASE x PASS\n",
		"evidence/logs/server-x.log": `{"time":"2026-12-01T02:35:00Z","level":"INFO","msg":"LISTEN","addr":"127.0.0.1:1","config":"workers=1"}` + "\n" + `{"time":"2026-12-01T02:35:01Z","level":"INFO","msg":"BOGUS"}` + "\n",
	})
	code, stderr := command(a, "report")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := `rpcbench: report: x: server-x.log: serverapi: log line 2: unknown event "BOGUS" (1 events before it are shown)`
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr =\n%s\nwant it to contain %q", stderr, want)
	}
	if page := readFile(t, "report.html"); !strings.Contains(page, "unknown event &#34;BOGUS&#34;") {
		t.Errorf("the page does not name the unreadable line")
	}
}
