package main

import (
	"testing"
)

func TestRunList(t *testing.T) {
	tests := []struct {
		name     string
		opts     listOptions
		wantCode int
		wantOut  string
	}{
		{"table", listOptions{Group: groupAll}, exitOK,
			"evidence  alpha      proves alpha\nevidence  long_name  proves long_name\nextra     gamma      proves gamma\n"},
		{"names", listOptions{Group: groupAll, Names: true}, exitOK, "alpha\nlong_name\ngamma\n"},
		{"one group", listOptions{Group: "extra", Names: true}, exitOK, "gamma\n"},
		{"unknown group", listOptions{Group: "nope"}, exitError, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r fakeRuns
			a, stdout, stderr := testApp(t, r.fake("alpha", "evidence", true), r.fake("long_name", "evidence", true), r.fake("gamma", "extra", true))
			o := tt.opts
			o.app = a
			code, errText := outcome(runList(&o), stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %s)", code, tt.wantCode, errText)
			}
			if got := stdout.String(); got != tt.wantOut {
				t.Errorf("stdout =\n%s\nwant\n%s", got, tt.wantOut)
			}
		})
	}
}
