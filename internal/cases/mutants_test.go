package cases

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/nethost"
)

// A mutant is one realistic bug, put into one source file by replacing
// one snippet, that the named scenarios exist to catch.
type mutant struct {
	name string
	// bug says what the mutant models.
	bug string
	// file is relative to the module root; old must occur in it exactly
	// once, so that a refactor that moves the code fails this test
	// instead of silently testing nothing.
	file     string
	old, new string
	// catch maps each scenario that must FAIL to a text its CASE line
	// must contain: the check that catches the bug, not some other.
	catch map[string]string
}

// mutants are every mutant, each area's list in a file of its own.
var mutants = slices.Concat(evidenceMutants, governanceMutants, durabilityMutants, robustnessMutants, chaosMutants, grpcMutants, deployMutants, deployLBMutants)

// evidenceMutants are the bugs of issue 9 ("Scenarios that catch the bugs
// they exist for") that once passed the evidence group, one entry each;
// the decoder's three are separate. Those of issue 10 and the network
// group follow them.
var evidenceMutants = []mutant{
	{
		name: "give_up_status_last_attempt_only",
		bug:  "a keyed debit whose first attempt timed out after executing, and whose retries were answered UNAVAILABLE, is reported UNAVAILABLE: the give-up status looks only at the last attempt",
		file: "internal/client/client.go",
		old:  "\tif !call.Idempotent {\n\t\tfor _, a := range log {\n",
		new:  "\tif !call.Idempotent {\n\t\tfor _, a := range log[len(log)-1:] {\n",
		catch: map[string]string{
			"keyed_unknown_stays_unknown": "status=UNAVAILABLE, want UNKNOWN",
		},
	},
	{
		name: "write_timeout_batch_not_sent",
		bug:  "a write that times out part-way through a batch puts the batch back as unwritten: requests already written end NOT_SENT and are re-sent",
		file: "internal/client/conn.go",
		old:  "\t\tif _, err := c.nc.Write(buf); err != nil {\n\t\t\tc.fail(",
		new:  "\t\tif _, err := c.nc.Write(buf); err != nil {\n\t\t\tc.mu.Lock()\n\t\t\tc.queued = append(c.queued, ids...)\n\t\t\tc.mu.Unlock()\n\t\t\tc.fail(",
		catch: map[string]string{
			"write_stall_written_not_resent": "want 0: a debit written before the stall was re-sent",
		},
	},
	{
		name: "context_deadline_ignored",
		bug:  "the caller's context deadline is ignored: the budget sent is the attempt timeout although the context allows 100 ms",
		file: "internal/client/call.go",
		old:  "\tif d, ok := ctx.Deadline(); ok && d.Before(deadline) {\n\t\tdeadline = d\n\t}\n",
		new:  "",
		catch: map[string]string{
			"budget_sent_is_time_left": "ctxDeadlineBudget=300ms, want at most 100ms",
		},
	},
	{
		name: "dial_time_not_deducted",
		bug:  "the first attempt on a freshly dialed connection sends the whole attempt timeout as its budget",
		file: "internal/client/client.go",
		old:  "\t\tbudget = time.Until(deadline)\n\t\ta.BudgetMs = budgetMs(budget)\n",
		new:  "\t\tbudget = time.Until(deadline)\n",
		catch: map[string]string{
			"budget_sent_is_time_left": "afterDialBudget=300ms, want at most 299ms",
		},
	},
	{
		name: "expiry_off_by_one",
		bug:  "the server's expiry check compares whole milliseconds with >, so a request with budgetMs 0 executes",
		file: "internal/server/worker.go",
		old:  "if waited := time.Since(j.arrival); waited >= budget {",
		new:  "if waited := time.Since(j.arrival); waited.Milliseconds() > budget.Milliseconds() {",
		catch: map[string]string{
			"zero_budget_not_executed": "readerPath=OK, want DEADLINE_EXCEEDED",
		},
	},
	{
		name: "duplicate_executes_while_original_runs",
		bug:  "a duplicate keyed request that arrives while its original is still executing executes too, as if it had no key",
		file: "internal/bank/bank.go",
		old:  "\t\tcase ClaimRunning:\n\t\t\tans, err = b.store.Await(r.Key, fp, r.Expiry, r.Done)\n",
		new:  "\t\tcase ClaimRunning:\n\t\t\treturn b.apply(r, Hold{}, dst)\n",
		catch: map[string]string{
			"duplicate_while_executing": "serverDebitExec=2, want 1",
		},
	},
	{
		name: "duplicate_waits_past_budget",
		bug:  "a duplicate keyed request waits for its original a second past its own budget",
		file: "internal/bank/bank.go",
		old:  "b.store.Await(r.Key, fp, r.Expiry, r.Done)",
		new:  "b.store.Await(r.Key, fp, r.Expiry.Add(time.Second), r.Done)",
		catch: map[string]string{
			"duplicate_while_executing": "replayed=true, want DEADLINE_EXCEEDED",
		},
	},
	{
		name: "budget_not_capped_by_time_left",
		bug:  "the budget is the attempt timeout, not capped by the time left before the call's deadline: 300 ms sent under a 100 ms deadline",
		file: "internal/client/call.go",
		old:  "return min(s.attemptTimeout, s.deadline.Sub(now))",
		new:  "return s.attemptTimeout",
		catch: map[string]string{
			"deadline_server_skips_expired": "budgetSent=300ms, want at most 100ms",
			"budget_sent_is_time_left":      "callTimeoutBudget=300ms, want at most 100ms",
		},
	},
	{
		name: "decoder_accepts_length_23",
		bug:  "the decoder accepts a length prefix of 23, one below the minimum, and waits for its body",
		file: "internal/proto/decoder.go",
		old:  "if n < MinFrameLen || n > MaxFrameLen {",
		new:  "if n < MinFrameLen-1 || n > MaxFrameLen {",
		catch: map[string]string{
			"decoder_split_model": "minMinus1Rejected=false",
		},
	},
	{
		name: "decoder_not_dead_after_error",
		bug:  "the decoder does not stay dead after an error: a later Feed decodes again",
		file: "internal/proto/decoder.go",
		old:  "\tif d.err != nil {\n\t\treturn frames, d.err\n\t}\n",
		new:  "",
		catch: map[string]string{
			"decoder_split_model": "deadAfterError=1 frames, error <nil>, want 0 frames, same error",
		},
	},
	{
		name: "decoder_drops_frames_before_bad",
		bug:  "the decoder drops the frames that were complete before a bad one in the same Feed",
		file: "internal/proto/decoder.go",
		old:  "\t\t\td.fail(err)\n\t\t\treturn frames, d.err\n",
		new:  "\t\t\td.fail(err)\n\t\t\treturn nil, d.err\n",
		catch: map[string]string{
			"decoder_split_model":              "framesBeforeBadMagic=0 frames, then bad magic 0xdead, want 2 frames",
			"server_split_and_invalid_request": "validThenBadAnswered=none, want 1",
		},
	},
	{
		name: "frames_after_response_frame_served",
		bug:  "the server drops a RESPONSE frame from a client but still serves the frames after it",
		file: "internal/proto/reader.go",
		old:  "\t\t\tframes = frames[:i]\n",
		new:  "\t\t\tframes = append(frames[:i], frames[i+1:]...)\n",
		catch: map[string]string{
			"server_split_and_invalid_request": "responseThenRequestBalance=990, want 1000",
		},
	},
	{
		name: "deadline_exceeded_final",
		bug:  "a server's DEADLINE_EXCEEDED answer is treated as final, so a debit it says was not executed is not retried",
		file: "internal/client/class.go",
		old:  "case proto.StatusUnavailable, proto.StatusDeadlineExceeded:",
		new:  "case proto.StatusUnavailable:",
		catch: map[string]string{
			"deadline_exceeded_answer_retried": "status=DEADLINE_EXCEEDED, want OK",
		},
	},
	{
		name: "backoff_doubles_once_too_often",
		bug:  "the backoff doubles once too often: 40, 80, 160 ms instead of 20, 40, 80",
		file: "internal/client/client.go",
		old:  "for i := 1; i < n && d < c.cfg.BackoffMax; i++ {",
		new:  "for i := 0; i < n && d < c.cfg.BackoffMax; i++ {",
		catch: map[string]string{
			"connect_refused_bounded_retry":    "pause1Of60ms=40ms, want 20ms",
			"retry_unavailable_non_idempotent": "want at most 24ms",
		},
	},
	// Issue 10: durable and shared dedup.
	{
		name: "record_committed_after_debit",
		bug:  "the SQL store commits the balance change, then writes the idempotency record in a statement of its own: a crash between the two leaves a debit no retry can see",
		file: "internal/bank/sqlstore.go",
		old:  "\tif h.Key != \"\" {\n\t\tif err := s.finishTx(ctx, tx, h, ans(a)); err != nil {\n\t\t\treturn Account{}, err\n\t\t}\n\t\tcallHook(s.opts.Hooks.BeforeCommit)\n\t}\n\tif err := tx.Commit(); err != nil {\n\t\treturn Account{}, fmt.Errorf(\"%w: %w\", ErrCommitUnknown, err)\n\t}\n\tif h.Key != \"\" {\n\t\ts.broadcast()\n\t\tcallHook(s.opts.Hooks.AfterCommit)\n\t}\n",
		new:  "\tif err := tx.Commit(); err != nil {\n\t\treturn Account{}, fmt.Errorf(\"%w: %w\", ErrCommitUnknown, err)\n\t}\n\tif h.Key != \"\" {\n\t\tcallHook(s.opts.Hooks.AfterCommit)\n\t\tif err := s.finishTx(ctx, s.db, h, ans(a)); err != nil {\n\t\t\treturn Account{}, err\n\t\t}\n\t\ts.broadcast()\n\t}\n",
		catch: map[string]string{
			"durable_dedup_survives_crash_sqlite": "result=OK balance=980 exec=2 replayed=false",
		},
	},
	{
		name: "await_ignores_lease_expiry",
		bug:  "a duplicate waiting on a running record keeps waiting after the record's lease expired, instead of claiming the key again: the retries of a crashed executor all time out",
		file: "internal/bank/sqlstore.go",
		old:  "\t\tcase r.leaseUntil <= now:\n\t\t\treturn Answer{}, ErrReleased // the claim may be taken over\n",
		new:  "",
		catch: map[string]string{
			"lease_expiry_takeover_sqlite": "takeovers=0, want 1",
		},
	},
	{
		name: "keepalive_never_declares_dead",
		bug:  "keepalive pings a silent peer but never gives up on it: the half-open connection is believed alive for ever",
		file: "internal/client/keepalive.go",
		old:  "\t\t\tc.fail(&ConnLostError{Err: fmt.Errorf(\"%w: nothing read",
		new:  "\t\t\tif ka.Time > 0 {\n\t\t\t\tcontinue\n\t\t\t}\n\t\t\tc.fail(&ConnLostError{Err: fmt.Errorf(\"%w: nothing read",
		catch: map[string]string{
			"half_open_peer_detected": "declaredDead=false, want true",
		},
	},
	{
		name: "lost_connection_means_not_sent",
		bug:  "a connection that dies after the request was written (an RST from a rebooted host) is taken to mean the request never arrived, so a keyless debit is re-sent",
		file: "internal/client/client.go",
		old:  "\tcase r.err != nil && r.notSent:\n",
		new:  "\tcase r.err != nil:\n",
		catch: map[string]string{
			"server_host_restart": "debit=OK, want UNKNOWN",
		},
	},
	{
		name: "keepalive_ignores_acks",
		bug:  "keepalive goes by reads alone: a live peer whose answer to the ping is queued behind a large request on a slow link is declared dead",
		file: "internal/client/keepalive.go",
		old:  "canTell && ok && now > acked &&",
		new:  "false && canTell && ok && now > acked &&",
		catch: map[string]string{
			"slow_link_head_of_line": "keepaliveTimeouts=",
		},
	},
	{
		name: "user_timeout_not_applied",
		bug:  "Config.UserTimeout is validated but never set on the socket: a request written into a silent link waits for the call's whole deadline",
		file: "internal/client/client.go",
		old:  "\tif cfg.UserTimeout > 0 {\n",
		new:  "\tif false && cfg.UserTimeout > 0 {\n",
		catch: map[string]string{
			"unacked_write_user_timeout": "want at most 2s",
		},
	},
}

// TestMutants builds rpcserver and rpcbench once as they are and once per
// mutant, with the mutant's file replaced through go build -overlay, and
// runs the mutant's scenarios with each build: every one must PASS
// unmutated and FAIL mutated, on the check named. It takes a few minutes,
// so it runs only when asked.
func TestMutants(t *testing.T) {
	if os.Getenv("RPCBENCH_MUTANTS") != "1" {
		t.Skip("builds the binaries once per mutant; run with RPCBENCH_MUTANTS=1 go test ./internal/cases -run Mutants -v")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// Scenarios on test hosts need root: without it their mutants are
	// left out, unless RPCBENCH_REQUIRE_NETNS=1.
	netErr := netnsErr // asked once, in TestMain
	if netErr != nil && nethost.Required() {
		t.Fatalf("%v (%s=1)", netErr, nethost.EnvRequire)
	}
	// Scenarios that drive a client adapter need its binary: without it
	// their mutants are left out, unless RPCBENCH_REQUIRE_ADAPTERS=1.
	if why := adapterSkip[StackGRPCGo]; why != "" && cut.Required() {
		t.Fatalf("%s; %s=1 demands it", why, cut.EnvRequire)
	}
	runnable := func(m mutant) bool {
		for name := range m.catch {
			c, _ := Default().Lookup(name)
			if c.Requires(NeedsNetwork) && netErr != nil || adapterMissing(c) != "" {
				return false
			}
		}
		return true
	}
	var all []string
	for _, m := range mutants {
		if !runnable(m) {
			t.Logf("leaving out mutant %s: no test hosts (%v) or no adapter (%s)", m.name, netErr, adapterSkip)
			continue
		}
		for name := range m.catch {
			if _, ok := Default().Lookup(name); !ok {
				t.Fatalf("mutant %s: no scenario %q", m.name, name)
			}
			if !slices.Contains(all, name) {
				all = append(all, name)
			}
		}
	}
	slices.Sort(all)

	t.Run("unmutated", func(t *testing.T) {
		bin := buildWith(t, root, nil)
		got := runScenarios(t, bin, all)
		for _, name := range all {
			// A stack's pinned violation is a FINDING: the scenario agrees
			// with its pins, as a PASS does.
			if v := got[name]; !strings.HasPrefix(v, "CASE "+name+" PASS") && !strings.HasPrefix(v, "CASE "+name+" FINDING") {
				t.Errorf("%s must PASS (or be the FINDING its pins say) unmutated; got %q", name, v)
			}
		}
	})
	if t.Failed() {
		t.Fatal("the scenarios fail unmutated: a mutant's FAIL would prove nothing")
	}
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			if !runnable(m) {
				t.Skip("no test hosts or no adapter")
			}
			src, err := os.ReadFile(filepath.Join(root, m.file))
			if err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(src, []byte(m.old)); n != 1 {
				t.Fatalf("%s holds the snippet %d times, want once: update the mutant to the code\nsnippet:\n%s", m.file, n, m.old)
			}
			mutated := filepath.Join(t.TempDir(), filepath.Base(m.file))
			if err := os.WriteFile(mutated, bytes.Replace(src, []byte(m.old), []byte(m.new), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			bin := buildWith(t, root, map[string]string{filepath.Join(root, m.file): mutated})
			names := slices.Sorted(maps.Keys(m.catch))
			got := runScenarios(t, bin, names)
			for _, name := range names {
				v, want := got[name], m.catch[name]
				if !strings.HasPrefix(v, "CASE "+name+" FAIL") || !strings.Contains(v, want) {
					t.Errorf("bug not caught: %s\n%s must FAIL with %q; got %q", m.bug, name, want, v)
					continue
				}
				t.Logf("caught by %s (%q):\n%s", name, want, v)
			}
		})
	}
}

// buildWith builds rpcbench and rpcserver into a temporary directory,
// each file in replace (absolute path) read from the file it maps to, and
// returns the rpcbench path.
func buildWith(t *testing.T, root string, replace map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	overlay := filepath.Join(dir, "overlay.json")
	b, err := json.Marshal(struct{ Replace map[string]string }{replace})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(overlay, b, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cmd := exec.Command("go", "build", "-overlay", overlay, "-o", dir+string(filepath.Separator), "./cmd/rpcbench", "./cmd/rpcserver")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built in %v", time.Since(start).Round(time.Millisecond))
	return filepath.Join(dir, "rpcbench")
}

// runScenarios runs the named scenarios with rpcbench, writing no
// evidence, and returns each one's CASE line by name. A CASE line is
// "CASE <name> <verdict> <fields>..." (see internal/report).
func runScenarios(t *testing.T, bin string, names []string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, append(append([]string{"run"}, names...), "--evidence", "", "--color", "never")...)
	cmd.WaitDelay = 5 * time.Second
	if a := env.Adapters[StackGRPCGo]; a != "" {
		// The adapter is not rebuilt: it is not the code mutated.
		cmd.Env = append(os.Environ(), cut.EnvGRPCGo+"="+a)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	// Exit 1 means a scenario failed, which a mutant is expected to do;
	// anything else is a failure to run.
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 1) {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", cmd, err, &stdout, &stderr)
	}
	t.Logf("ran %s in %v", strings.Join(names, " "), time.Since(start).Round(time.Millisecond))
	got := map[string]string{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "CASE" {
			got[f[1]] = sc.Text()
		}
	}
	for _, name := range names {
		if _, ok := got[name]; !ok {
			t.Errorf("rpcbench printed no CASE line for %s\nstdout:\n%s\nstderr:\n%s", name, &stdout, &stderr)
		}
	}
	return got
}
