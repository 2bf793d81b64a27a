package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/cases"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

func TestRunList(t *testing.T) {
	tests := []struct {
		name     string
		opts     listOptions
		wantCode int
		wantOut  string
	}{
		{"table, group by group", listOptions{Group: scenario.GroupAll}, exitOK,
			"GROUP       NAME       PROVES\n" +
				"evidence    alpha      proves alpha\n" +
				"evidence    long_name  proves long_name\n" +
				"robustness  gamma      proves gamma\n" +
				"robustness  delta      proves delta\n" +
				"extra       omega      proves omega\n"},
		{"names, group by group", listOptions{Group: scenario.GroupAll, Names: true}, exitOK, "alpha\nlong_name\ngamma\ndelta\nomega\n"},
		{"one group", listOptions{Group: "robustness"}, exitOK,
			"GROUP       NAME   PROVES\n" +
				"robustness  gamma  proves gamma\n" +
				"robustness  delta  proves delta\n"},
		{"one group, names", listOptions{Group: "robustness", Names: true}, exitOK, "gamma\ndelta\n"},
		{"unknown group", listOptions{Group: "nope"}, exitError, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r fakeRuns
			// Registered out of group order, as a registry may grow.
			a, stdout, stderr := testApp(t,
				r.fake("alpha", "evidence", true),
				r.fake("gamma", "robustness", true),
				r.fake("long_name", "evidence", true),
				r.fake("omega", "extra", true),
				r.fake("delta", "robustness", true),
			)
			o := tt.opts
			o.app = a
			code, errText := outcome(runList(&o), stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %s)", code, tt.wantCode, errText)
			}
			if diff := cmp.Diff(tt.wantOut, stdout.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if tt.wantCode == exitError && errText != "rpcbench: no scenarios in group \"nope\"\nvalid groups: evidence, robustness, extra, all\n" {
				t.Errorf("stderr = %q, want the valid groups", errText)
			}
		})
	}
}

// TestExecuteList lists the real registry, whatever groups it holds.
func TestExecuteList(t *testing.T) {
	r := cases.Default()
	var names []string
	for _, g := range r.Groups() {
		names = append(names, r.Select(g).Names()...)
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"list", "--names"}, names},
		{[]string{"list", "--names", "--group", cases.GroupEvidence}, r.Select(cases.GroupEvidence).Names()},
		{[]string{"list"}, append([]string{"GROUP"}, names...)},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := execute(context.Background(), tt.args, &stdout, &stderr); code != exitOK {
				t.Fatalf("exit code %d, stderr %s", code, stderr.String())
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
				f := strings.Fields(line)
				if !slices.Contains(tt.args, "--names") {
					// GROUP NAME PROVES: keep the name, or the heading.
					if f[0] == "GROUP" {
						f = f[:1]
					} else {
						f = f[1:2]
					}
				}
				if len(f) != 1 {
					t.Fatalf("line %q is not a bare name", line)
				}
				got = append(got, f[0])
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("listed (-want +got):\n%s", diff)
			}
		})
	}
}
