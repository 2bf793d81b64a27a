package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/serverproc"
)

// bankProtoArgs give target the Bank's schema from its .proto.
func bankProtoArgs(t *testing.T) []string {
	dir, err := filepath.Abs("../../proto")
	if err != nil {
		t.Fatal(err)
	}
	return []string{"-I", dir, "--proto", "rpcbench/bank/v1/bank.proto"}
}

// TestTargetUsage: every mistake in target's command line exits 2,
// before anything is sent, saying what is valid.
func TestTargetUsage(t *testing.T) {
	addr := deadAddr(t) // nothing is sent: no server needed
	proto := bankProtoArgs(t)
	debit := []string{"--method", "rpcbench.bank.v1.Bank/Debit"}
	cat := func(parts ...[]string) []string {
		out := []string{"target"}
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	checkUsage(t, "CASE", []usageCase{
		{"no address", cat(debit), "target takes one address, HOST:PORT"},
		{"bad address", cat([]string{"localhost"}, debit), "give HOST:PORT"},
		{"no method", cat([]string{addr}, proto), "target needs --method"},
		{"unknown method", cat([]string{addr, "--method", "rpcbench.bank.v1.Bank/Debti"}, proto), "did you mean rpcbench.bank.v1.Bank/Debit?"},
		{"request not the message", cat([]string{addr, "--data", `{"acount":"x"}`}, debit, proto), `--data: schema: request for rpcbench.bank.v1.Bank/Debit is not a rpcbench.bank.v1.DebitRequest`},
		{"request file missing", cat([]string{addr, "--data", "@/nonexistent/req.json"}, debit, proto), "--data: open /nonexistent/req.json"},
		{"observe without field", cat([]string{addr, "--observe", "rpcbench.bank.v1.Bank/Get"}, debit, proto), "--observe needs --observe-field"},
		{"observe field not an integer", cat([]string{addr, "--observe", "rpcbench.bank.v1.Bank/Get", "--observe-field", "replayed"}, debit, proto), "must be an integer"},
		{"observe field absent", cat([]string{addr, "--observe", "rpcbench.bank.v1.Bank/Get", "--observe-field", "balanse"}, debit, proto), "has no field \"balanse\""},
		{"field without observe", cat([]string{addr, "--observe-field", "balance"}, debit, proto), "give --observe SERVICE/METHOD too"},
		{"slow data without slow for", cat([]string{addr, "--slow-data", "{}"}, debit, proto), "--slow-data and --slow-for go together"},
		{"two schemas", cat([]string{addr, "--descriptor-set", "x.binpb"}, debit, proto), "give one"},
		{"import path alone", cat([]string{addr, "-I", "."}, debit), "give --proto too"},
		{"proto missing", cat([]string{addr, "--proto", "nope.proto"}, debit), "nope.proto"},
		{"bad name", cat([]string{addr, "--name", "My Service"}, debit, proto), "--name \"My Service\""},
		{"bad trials", cat([]string{addr, "--trials", "-1"}, debit, proto), "--trials -1"},
	})
}

// TestTargetRPCServer judges rpcserver's gRPC side as a user's running
// service, with the balance as the oracle and without one: every row
// passes with it, and without it the rows that count executions are n/a.
// A service that is not there is an ERROR naming it, exit 1.
func TestTargetRPCServer(t *testing.T) {
	t.Parallel()
	p := startGRPCServer(t)
	base := append([]string{"target", p.Addr, "--trials", "3", "--late-window", "50ms", "--method", "rpcbench.bank.v1.Bank/Debit",
		"--data", `{"account":"acct-T","amount":1}`}, bankProtoArgs(t)...)

	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := append(append([]string{}, base...), "--observe", "rpcbench.bank.v1.Bank/Get", "--observe-data", `{"account":"acct-T"}`,
		"--observe-field", "balance", "--slow-data", `{"account":"acct-T","amount":1,"sleepMs":200}`, "--slow-for", "200ms", "--settle", "5ms",
		"--evidence", filepath.Join(dir, "ev"))
	if code := execute(context.Background(), args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	if n := strings.Count(out, " PASS "); n != 12 || !strings.Contains(out, "12 passed, 0 failed") {
		t.Errorf("%d PASS lines, want 12:\n%s", n, out)
	}
	if !strings.Contains(stderr.String(), "oracle: observe rpcbench.bank.v1.Bank/Get .balance (-1 per execution)") {
		t.Errorf("stderr does not say what the oracle is and what it measured:\n%s", stderr.String())
	}
	if ev := readFile(t, filepath.Join(dir, "ev", "output.txt")); !strings.Contains(ev, "CASE target_timeout_0n PASS") {
		t.Errorf("evidence output.txt:\n%s", ev)
	}
	// The evidence is a scorecard's: the service's column in the
	// server rows.
	stdout.Reset()
	stderr.Reset()
	if code := execute(context.Background(), []string{"scorecard", filepath.Join(dir, "ev"), "--color", "never"}, &stdout, &stderr); code != exitOK ||
		!strings.Contains(stdout.String(), "judged from outside by rpcbench target") || !strings.Contains(stdout.String(), "grpcserver_cancel_stops_handler") {
		t.Errorf("scorecard of target's evidence: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}

	stdout.Reset()
	stderr.Reset()
	args = append(append([]string{}, base...), "--evidence", "", "--run", "timeout_0n|bad_frame")
	if code := execute(context.Background(), args, &stdout, &stderr); code != exitOK {
		t.Fatalf("without an oracle: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	out = stdout.String()
	if !strings.Contains(out, "CASE target_timeout_0n N/A") || !strings.Contains(out, "executions=unknown") || !strings.Contains(out, "CASE target_bad_frame PASS") {
		t.Errorf("without an oracle, want n/a rows with executions=unknown and bad_frame judged:\n%s", out)
	}

	stdout.Reset()
	stderr.Reset()
	gone := deadAddr(t)
	args = append([]string{"target", gone, "--method", "rpcbench.bank.v1.Bank/Debit", "--evidence", "", "--run", "bad_frame"}, bankProtoArgs(t)...)
	if code := execute(context.Background(), args, &stdout, &stderr); code != exitFailed || !strings.Contains(stdout.String(), "CASE target_bad_frame ERROR") || !strings.Contains(stdout.String(), gone) {
		t.Errorf("nothing at %s: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d and an ERROR naming it", gone, code, stdout.String(), stderr.String(), exitFailed)
	}
}

// startGRPCServer starts rpcserver's gRPC side on a free port, stopped
// when the test ends: a running service for target and proxy.
func startGRPCServer(t *testing.T) *serverproc.Proc {
	t.Helper()
	_, rpcserver := buildBinaries(t)
	p, err := serverproc.StartAwait(context.Background(), serverproc.Spec{
		Bin: rpcserver, Args: []string{"-grpc", "-addr", "127.0.0.1:0"}, Announce: serverapi.ParseAnnounce, Want: "an rpcserver",
	}, serverproc.StartTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// usageCase is a command line that must be refused as a usage error,
// its stderr saying says.
type usageCase struct {
	name string
	args []string
	says string
}

// checkUsage runs each case and holds it to exit 2, to stderr saying
// what it should, and to nothing run: stdout must not hold ran, the
// first words of what running would print.
func checkUsage(t *testing.T, ran string, cases []usageCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := execute(context.Background(), c.args, &stdout, &stderr)
			if code != exitError || !strings.Contains(stderr.String(), c.says) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d saying %q", code, stderr.String(), exitError, c.says)
			}
			if strings.Contains(stdout.String(), ran) {
				t.Errorf("a usage error ran:\n%s", stdout.String())
			}
		})
	}
}
