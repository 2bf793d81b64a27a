package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/cases"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

func TestRunRun(t *testing.T) {
	tests := []struct {
		name     string
		names    []string
		wantRuns []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{
			name:     "in the order given",
			names:    []string{"gamma", "alpha"},
			wantRuns: []string{"gamma", "alpha"},
			wantCode: exitOK,
			wantOut:  "CASE gamma PASS\nCASE alpha PASS\n2 passed, 0 failed\n",
		},
		{
			name:     "each once",
			names:    []string{"alpha", "alpha"},
			wantRuns: []string{"alpha"},
			wantCode: exitOK,
			wantOut:  "CASE alpha PASS\n1 passed, 0 failed\n",
		},
		{
			name:     "a failure",
			names:    []string{"alpha", "broken"},
			wantRuns: []string{"alpha", "broken"},
			wantCode: exitFailed,
			wantOut:  "CASE alpha PASS\nCASE broken FAIL why=[it broke]\n1 passed, 1 failed\n",
		},
		{
			name:     "unknown names",
			names:    []string{"alpha", "nope", "nada"},
			wantCode: exitError,
			wantErr:  "rpcbench: unknown scenario nope, nada\n'rpcbench list' shows every scenario\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r fakeRuns
			a, stdout, stderr := testApp(t,
				r.fake("alpha", "g1", true),
				r.fake("broken", "g1", false, report.Field{Key: "why", Value: "it broke"}),
				r.fake("gamma", "g2", true),
			)
			err := runRun(context.Background(), &runOptions{app: a, Names: tt.names})
			code, errText := outcome(err, stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (err %v)", code, tt.wantCode, err)
			}
			if diff := cmp.Diff(tt.wantRuns, r.names()); diff != "" {
				t.Errorf("scenarios run (-want +got):\n%s", diff)
			}
			if got := stdout.String(); got != tt.wantOut {
				t.Errorf("stdout =\n%s\nwant\n%s", got, tt.wantOut)
			}
			if tt.wantErr != "" && errText != tt.wantErr {
				t.Errorf("stderr =\n%s\nwant\n%s", errText, tt.wantErr)
			}
			if entries, _ := os.ReadDir("."); len(entries) != 0 {
				t.Errorf("run wrote %v without --evidence or --json", entries)
			}
		})
	}
}

func TestRunRunEvidenceAndJSON(t *testing.T) {
	var r fakeRuns
	a, stdout, stderr := testApp(t, r.fake("alpha", "g", true), r.fake("beta", "g", false))
	err := runRun(context.Background(), &runOptions{app: a, Names: []string{"beta"}, Evidence: "out", JSON: "r.json"})
	if code, errText := outcome(err, stderr); code != exitFailed {
		t.Fatalf("exit code %d, want %d; stderr %s", code, exitFailed, errText)
	}
	if got := readFile(t, filepath.Join("out", report.OutputFile)); got != stdout.String() {
		t.Errorf("output.txt =\n%s\nwant what stdout showed:\n%s", got, stdout.String())
	}
	if got := readFile(t, "r.json"); !strings.Contains(got, `"summary": "0 passed, 1 failed"`) {
		t.Errorf("r.json = %s", got)
	}
}

func TestRunCompletion(t *testing.T) {
	var r fakeRuns
	a, _, _ := testApp(t, r.fake("alpha", "g", true), r.fake("also", "g", true), r.fake("beta", "g", true))
	cmd := newRunCmd(a)
	tests := []struct {
		args       []string
		toComplete string
		want       []string
	}{
		{nil, "", []string{"alpha\tproves alpha", "also\tproves also", "beta\tproves beta"}},
		{nil, "al", []string{"alpha\tproves alpha", "also\tproves also"}},
		{[]string{"alpha"}, "al", []string{"also\tproves also"}},
		{nil, "zzz", nil},
	}
	for _, tt := range tests {
		got, _ := cmd.ValidArgsFunction(cmd, tt.args, tt.toComplete)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("complete(%v, %q) (-want +got):\n%s", tt.args, tt.toComplete, diff)
		}
	}
}

func TestRunRunCount(t *testing.T) {
	var r fakeRuns
	a, stdout, stderr := testApp(t,
		r.fake("alpha", cases.GroupEvidence, true),
		r.flaky("other", "robustness", 1),
	)
	err := runRun(context.Background(), &runOptions{app: a, Names: []string{"other", "alpha"}, Count: 2})
	code, errText := outcome(err, stderr)
	if code != exitFailed {
		t.Errorf("exit code %d, want %d (stderr %s)", code, exitFailed, errText)
	}
	if diff := cmp.Diff([]string{"other", "alpha", "other", "alpha"}, r.names()); diff != "" {
		t.Errorf("scenarios run (-want +got):\n%s", diff)
	}
	want := "CASE other FAIL\nCASE alpha PASS\nCASE other PASS\nCASE alpha PASS\n" +
		"other  1/2  failed in run 1\n" +
		"alpha  2/2\n" +
		"3 passed, 1 failed\n"
	if diff := cmp.Diff(want, stdout.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if !strings.Contains(errText, "# run 1/2\n# run 2/2\n") {
		t.Errorf("stderr %q lacks the progress lines", errText)
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("run wrote %v without --evidence or --json", entries)
	}
}

// TestRunOnlySkipped: naming scenarios that all SKIP here exits 1 with a
// line saying nothing ran, where one that ran beside them keeps the run's
// own status.
func TestRunOnlySkipped(t *testing.T) {
	skip := scenario.Fake("needs_pg", "durability", "needs PostgreSQL", func(context.Context, scenario.Env) report.Line {
		return report.Skip("needs_pg", "no PostgreSQL: install Debian's postgresql")
	})
	pass := scenario.Fake("alpha", "g1", "passes", func(context.Context, scenario.Env) report.Line {
		return report.Line{Name: "alpha", Verdict: report.Pass}
	})
	for _, tt := range []struct {
		names    []string
		wantCode int
	}{
		{[]string{"needs_pg"}, exitFailed},
		{[]string{"needs_pg", "alpha"}, exitOK},
	} {
		a, _, stderr := testApp(t, skip, pass)
		code, errText := outcome(runRun(context.Background(), &runOptions{app: a, Names: tt.names}), stderr)
		if code != tt.wantCode {
			t.Errorf("run %v: exit %d, want %d; stderr:\n%s", tt.names, code, tt.wantCode, errText)
		}
		if said := strings.Contains(errText, "could run on this machine"); said != (tt.wantCode == exitFailed) {
			t.Errorf("run %v: stderr says nothing ran: %v; stderr:\n%s", tt.names, said, errText)
		}
	}
}
