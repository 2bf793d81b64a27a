package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/trace"
)

// TestRunAndSkip: --run and --skip select as go test -run does, for run
// and all; a bad expression, an empty selection and a near-miss name are
// usage errors that say what to do.
func TestRunAndSkip(t *testing.T) {
	var runs fakeRuns
	list := []scenario.Case{
		runs.fake("late_response_dropped_by_id", "evidence", true),
		runs.fake("late_then_retry_new_request_id", "evidence", true),
		runs.fake("normal_multiplex", "evidence", true),
		runs.fake("hostile_slow_sender", "robustness", true),
	}
	tests := []struct {
		name     string
		args     []string
		wantRuns []string
		wantCode int
		wantErr  []string
	}{
		{"run by prefix", []string{"run", "--run", "late_"}, []string{"late_response_dropped_by_id", "late_then_retry_new_request_id"}, exitOK, nil},
		{"run anchored", []string{"run", "--run", "^late_response"}, []string{"late_response_dropped_by_id"}, exitOK, nil},
		{"run unanchored, any group", []string{"run", "--run", "slow|multiplex"}, []string{"normal_multiplex", "hostile_slow_sender"}, exitOK, nil},
		{"run and skip", []string{"run", "--run", "late", "--skip", "retry"}, []string{"late_response_dropped_by_id"}, exitOK, nil},
		{"names filtered by --run", []string{"run", "normal_multiplex", "late_response_dropped_by_id", "--run", "late"}, []string{"late_response_dropped_by_id"}, exitOK, nil},
		{"all with skip", []string{"all", "--evidence", "", "--skip", "^late"}, []string{"normal_multiplex"}, exitOK, nil},
		{"all with run", []string{"all", "--evidence", "", "--group", "robustness", "--run", "slow"}, []string{"hostile_slow_sender"}, exitOK, nil},
		{"bad expression", []string{"run", "--run", "late_("}, nil, exitError, []string{"--run: error parsing regexp"}},
		{"nothing matches", []string{"run", "--run", "^nope"}, nil, exitError, []string{`no scenario matches --run "^nope"` + "\n'rpcbench list' shows every scenario\n"}},
		{"skip leaves none", []string{"all", "--evidence", "", "--skip", "."}, nil, exitError, []string{`--skip "." leaves none of the 3 scenarios`}},
		{"run and skip cancel out", []string{"run", "--run", "late", "--skip", "late"}, nil, exitError, []string{`--run "late" selects 2 scenarios and --skip "late" leaves none of them`}},
		{"typo in --run", []string{"run", "--run", "normal_multiplx"}, nil, exitError, []string{`no scenario matches --run "normal_multiplx"; did you mean normal_multiplex?`}},
		{"typo", []string{"run", "normal_multiplx"}, nil, exitError, []string{"unknown scenario normal_multiplx; did you mean normal_multiplex?\n'rpcbench list' shows every scenario\n"}},
		{"part of a name", []string{"run", "late"}, nil, exitError, []string{"did you mean late_response_dropped_by_id or late_then_retry_new_request_id?"}},
		{"a pattern as a name", []string{"run", "late_.*"}, nil, exitError, []string{"use --run REGEX"}},
		{"neither names nor --run", []string{"run"}, nil, exitError, []string{"at least one scenario name, or --run REGEX"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkSelection(t, &runs, list, tt.args, tt.wantRuns, tt.wantCode, tt.wantErr)
		})
	}
}

// checkSelection runs the command args over list and checks its exit
// code, the scenarios it ran and what stderr says; it returns stderr.
func checkSelection(t *testing.T, runs *fakeRuns, list []scenario.Case, args, wantRuns []string, wantCode int, wantErr []string) string {
	t.Helper()
	runs.runs = nil
	a, _, stderr := testApp(t, list...)
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetOut(a.Out)
	root.SetErr(a.Err)
	code, errText := outcome(root.ExecuteContext(context.Background()), stderr)
	if code != wantCode {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, wantCode, errText)
	}
	if diff := cmp.Diff(wantRuns, runs.names()); diff != "" {
		t.Errorf("scenarios run (-want +got):\n%s", diff)
	}
	for _, w := range wantErr {
		if !strings.Contains(errText, w) {
			t.Errorf("stderr does not say %q:\n%s", w, errText)
		}
	}
	return errText
}

// TestSelectColumns: a judging scenario's own name runs it in every
// column, --stack and --config keep the columns named, and a stack or
// configuration no scenario runs is a usage error naming the valid ones;
// no error prints the whole catalogue.
func TestSelectColumns(t *testing.T) {
	var runs fakeRuns
	col := func(sc, stack, config, slug string) scenario.Case {
		c := runs.fake(sc+"_"+slug, "grpc", true)
		c.Column = scenario.Column{Scenario: sc, Stack: stack, Config: config}
		return c
	}
	list := []scenario.Case{
		runs.fake("normal_multiplex", "evidence", true),
		col("grpc_close_after_exec", "rpcbench", "client", "rpcbench"),
		col("grpc_close_after_exec", "grpc-go", "default", "grpcgo_default"),
		col("grpc_close_after_exec", "grpc-go", "retry", "grpcgo_retry"),
		col("grpc_close_after_exec", "grpc-js", "retry", "grpcjs_retry"),
		col("grpc_refused_stream", "grpc-go", "retry", "grpcgo_retry"),
	}
	tests := []struct {
		name     string
		args     []string
		wantRuns []string
		wantCode int
		wantErr  []string
	}{
		{"a scenario's own name", []string{"run", "grpc_close_after_exec"},
			[]string{"grpc_close_after_exec_rpcbench", "grpc_close_after_exec_grpcgo_default", "grpc_close_after_exec_grpcgo_retry", "grpc_close_after_exec_grpcjs_retry"}, exitOK, nil},
		{"with a stack", []string{"run", "grpc_close_after_exec", "--stack", "grpc-go"},
			[]string{"grpc_close_after_exec_grpcgo_default", "grpc_close_after_exec_grpcgo_retry"}, exitOK, nil},
		{"stacks and a config", []string{"run", "--run", "grpc_", "--stack", "grpc-go,grpc-js", "--config", "retry"},
			[]string{"grpc_close_after_exec_grpcgo_retry", "grpc_close_after_exec_grpcjs_retry", "grpc_refused_stream_grpcgo_retry"}, exitOK, nil},
		{"all with a config", []string{"all", "--group", "grpc", "--evidence", "", "--config", "default"},
			[]string{"grpc_close_after_exec_grpcgo_default"}, exitOK, nil},
		{"all with a stack would replace the group's evidence", []string{"all", "--group", "grpc", "--stack", "grpc-go"},
			nil, exitError, []string{"would replace evidence/grpc/ with part of it"}},
		{"an unknown stack", []string{"run", "grpc_close_after_exec", "--stack", "grpc-java"},
			nil, exitError, []string{`--stack "grpc-java": no scenario runs it`, "valid stacks: rpcbench, grpc-go, grpc-js\n"}},
		{"an unknown config", []string{"run", "--run", "grpc_", "--config", "hedge"},
			nil, exitError, []string{`--config "hedge": no scenario runs it`, "valid configs: client, default, retry\n"}},
		{"columns none of the names has", []string{"run", "normal_multiplex", "--stack", "grpc-go"},
			nil, exitError, []string{"none of the 1 scenario selected runs in such a column"}},
		{"a near miss of a scenario's name", []string{"run", "grpc_close_after_exc"},
			nil, exitError, []string{"unknown scenario grpc_close_after_exc; did you mean grpc_close_after_exec?\n'rpcbench list' shows every scenario\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errText := checkSelection(t, &runs, list, tt.args, tt.wantRuns, tt.wantCode, tt.wantErr)
			if strings.Count(errText, "\n") > 4 {
				t.Errorf("stderr runs to %d lines:\n%s", strings.Count(errText, "\n"), errText)
			}
		})
	}
}

// TestTimeout: a scenario past --timeout FAILs with a why that names the
// timeout, and the run goes on to the next one.
func TestTimeout(t *testing.T) {
	var runs fakeRuns
	stuck := scenario.Fake("stuck", "evidence", "never ends by itself", func(ctx context.Context, _ scenario.Env) report.Line {
		<-ctx.Done() // a scenario ends when its context does, as Run does
		return scenario.Stopped(ctx, "stuck", nil, nil)
	})
	a, stdout, stderr := testApp(t, stuck, runs.fake("after", "evidence", true))
	err := runRun(context.Background(), &runOptions{app: a, Names: []string{"stuck", "after"}, control: control{Timeout: 50 * time.Millisecond}})
	code, errText := outcome(err, stderr)
	if code != exitFailed {
		t.Errorf("exit %d, want %d: %s", code, exitFailed, errText)
	}
	want := "CASE stuck FAIL why=[timed out after 50ms (--timeout)]\nCASE after PASS\n1 passed, 1 failed\n"
	if diff := cmp.Diff(want, stdout.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

// TestFailFast: --failfast stops after the first scenario that does not
// pass, and the evidence directory is left as it was.
func TestFailFast(t *testing.T) {
	var runs fakeRuns
	a, stdout, stderr := testApp(t, runs.fake("a", "evidence", true), runs.fake("b", "evidence", false), runs.fake("c", "evidence", true))
	err := runAll(context.Background(), &allOptions{app: a, Group: "evidence", Evidence: "ev", control: control{FailFast: true}})
	if code, errText := outcome(err, stderr); code != exitFailed || !strings.Contains(errText, "--failfast: stopping after b; 1 scenario run not run") {
		t.Errorf("exit %d, stderr:\n%s", code, errText)
	}
	if diff := cmp.Diff([]string{"a", "b"}, runs.names()); diff != "" {
		t.Errorf("scenarios run (-want +got):\n%s", diff)
	}
	if !strings.HasSuffix(stdout.String(), "1 passed, 1 failed\n") {
		t.Errorf("summary: %q", stdout.String())
	}
	if _, err := os.Stat(filepath.Join("ev", report.OutputFile)); !os.IsNotExist(err) {
		t.Errorf("a run stopped by --failfast wrote evidence: %v", err)
	}
}

// TestVerbose: -v prints a scenario's attempts, from its trace, and its
// server's events under its CASE line.
func TestVerbose(t *testing.T) {
	logLine := `{"time":"2026-01-02T03:04:05.000000006Z","level":"INFO","msg":"CONN_OPEN","conn":1,"remote":"x"}` + "\n"
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	recs := []trace.Record{
		{Client: 1, Call: 1, Attempt: 1, Method: "debit", Key: "k1", ID: 1, Start: at, End: at, Outcome: client.OutcomeTimeout,
			Class: client.ClassUnknown, BudgetMs: 299, BackoffMs: 22},
		{Client: 1, Call: 1, Attempt: 2, Method: "debit", Key: "k1", ID: 2, Start: at, End: at, Outcome: client.OutcomeResponse,
			Class: client.ClassFinal, Status: "OK", BudgetMs: 300},
	}
	sc := scenario.Fake("v", "evidence", "verbose", func(_ context.Context, env scenario.Env) report.Line {
		os.WriteFile(filepath.Join(env.LogDir, report.ServerLog("v", 1)), []byte(logLine), 0o644)
		f, _ := os.Create(filepath.Join(env.LogDir, report.TraceLog("v")))
		trace.Write(f, recs)
		f.Close()
		return report.Line{Name: "v", Verdict: report.Pass}
	})
	a, stdout, _ := testApp(t, sc)
	if err := runRun(context.Background(), &runOptions{app: a, Names: []string{"v"}, control: control{Verbose: true}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"    trace-v.jsonl:\n      client 1 call 1 debit key=k1 a1 TIMEOUT id=1 budget=299 class=OUTCOME_UNKNOWN backoff=22ms\n" +
			"      client 1 call 1 debit key=k1 a2 RESPONSE status=OK id=2 budget=300 class=FINAL\n",
		"    server-v.log:\n      03:04:05.000000 CONN_OPEN conn=1 remote=x\n",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("-v output lacks %q:\n%s", want, stdout.String())
		}
	}
}

// TestSuggestionWithoutList: a name or --run with a near scenario gets
// the suggestion and a pointer to 'rpcbench list', not every name.
func TestSuggestionWithoutList(t *testing.T) {
	var runs fakeRuns
	for _, args := range [][]string{{"run", "normal_multiplx"}, {"run", "--run", "normal_multiplx"}} {
		a, _, _ := testApp(t, runs.fake("normal_multiplex", "evidence", true), runs.fake("late_response_dropped_by_id", "evidence", true))
		code, errText := command(a, args...)
		if code != exitError || !strings.Contains(errText, "did you mean normal_multiplex?") || strings.Contains(errText, "late_response_dropped_by_id") {
			t.Errorf("%v: exit %d, stderr %q; want %d, the suggestion and no list", args, code, errText, exitError)
		}
	}
}
