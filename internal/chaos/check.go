package chaos

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// Check is one checker's verdict and what it saw.
type Check struct {
	Name string
	// Verdict is report.Pass, report.Fail, or report.Unknown when the
	// checker could not decide (the linearizability check timed out).
	Verdict report.Verdict
	// Detail is "key=value ..." text for the checker's line.
	Detail string
	// Counts are the numbers Detail shows, by their keys; nil for a
	// checker that shows none, or could not count.
	Counts map[string]int
}

// Result is a run's history and verdicts.
type Result struct {
	Options  Options
	Schedule []Event
	Ops      []Op
	// Faults is how many nemesis events were carried out.
	Faults              int
	OK, Failed, Unknown int
	Checks              []Check
	Linear              LinearResult
	// Verdict is FAIL if any check failed, else UNKNOWN if any could not
	// decide, else PASS.
	Verdict       report.Verdict
	NemesisErrors []string
	// InterruptedAfter is how long the workload ran before the run was
	// interrupted; the checks then cover only the history recorded until
	// then. 0 means it was not interrupted.
	InterruptedAfter time.Duration
}

// Names of the checkers, as their lines start.
const (
	CheckLinear      = "linearizable"
	CheckExactlyOnce = "exactly_once"
	CheckRightCaller = "right_caller"
)

// check runs every checker over the history.
func check(o Options, sched []Event, ops []Op, f *fleet, applied int) Result {
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Invoke < ops[j].Invoke })
	res := Result{Options: o, Schedule: sched, Ops: ops, Faults: applied}
	for _, op := range ops {
		switch op.Outcome {
		case OutcomeOK:
			res.OK++
		case OutcomeFailed:
			res.Failed++
		default:
			res.Unknown++
		}
	}
	res.Linear = CheckLinearizable(ops, bank.DefaultBalance, o.CheckTimeout)
	lin := Check{Name: CheckLinear, Verdict: res.Linear.Verdict,
		Detail: fmt.Sprintf("accounts=%d ops=%d", res.Linear.Accounts, res.Linear.Ops)}
	if len(res.Linear.Failed) > 0 {
		lin.Detail += " failed=" + strings.Join(res.Linear.Failed, ",")
	}
	if len(res.Linear.TimedOut) > 0 {
		lin.Detail += " timed_out=" + strings.Join(res.Linear.TimedOut, ",")
	}
	res.Checks = append(res.Checks, lin, exactlyOnce(ops, f), rightCaller(ops))
	res.Verdict = report.Pass
	for _, c := range res.Checks {
		switch {
		case c.Verdict == report.Fail:
			res.Verdict = report.Fail
		case c.Verdict == report.Unknown && res.Verdict == report.Pass:
			res.Verdict = report.Unknown
		}
	}
	return res
}

// execCounts counts, per idempotency key, the OK debits the servers'
// logs record as executed (EXEC events), over every server and every
// incarnation of it.
func execCounts(f *fleet) (map[string]int, error) {
	counts := map[string]int{}
	for i := range f.o.Servers {
		b, err := os.ReadFile(f.logPath(i))
		if err != nil {
			return nil, err
		}
		evs, err := serverapi.ReadEvents(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.logPath(i), err)
		}
		for _, e := range evs {
			if e.Name == serverapi.EventExec && e.Text(serverapi.KeyMethod) == bank.MethodDebit &&
				e.Text(serverapi.KeyStatus) == proto.StatusOK.String() && e.Text(serverapi.KeyKey) != "" {
				counts[e.Text(serverapi.KeyKey)]++
			}
		}
	}
	return counts, nil
}

// exactlyOnce checks the keyed debits against the servers' logs: no key
// executed twice; every acknowledged one executed once; none the servers
// called unexecuted (failed) executed. A server killed between a commit
// and its EXEC line loses that line, so an acknowledged key with no line
// fails the check only when no server was down during its call.
func exactlyOnce(ops []Op, f *fleet) Check {
	c := Check{Name: CheckExactlyOnce, Verdict: report.Pass}
	counts, err := execCounts(f)
	if err != nil {
		c.Verdict, c.Detail = report.Fail, "logs unreadable: "+err.Error()
		return c
	}
	var keys, twice, missing, failedRan, excused int
	var examples []string
	for _, op := range ops {
		if op.Kind != OpKeyedDebit {
			continue
		}
		keys++
		n := counts[op.Key]
		switch {
		case n > 1:
			twice++
			examples = append(examples, fmt.Sprintf("%s executed %d times", op.Key, n))
		case op.Outcome == OutcomeOK && n == 0 && f.downDuring(op):
			excused++
		case op.Outcome == OutcomeOK && n == 0:
			missing++
			examples = append(examples, fmt.Sprintf("%s acknowledged, never executed", op.Key))
		case op.Outcome == OutcomeFailed && n > 0:
			failedRan++
			examples = append(examples, fmt.Sprintf("%s answered %s but executed", op.Key, op.Status))
		}
	}
	c.Detail = fmt.Sprintf("keys=%d executed_twice=%d acked_unexecuted=%d failed_executed=%d unlogged_at_kill=%d", keys, twice, missing, failedRan, excused)
	c.Counts = map[string]int{"keys": keys, "executed_twice": twice, "acked_unexecuted": missing, "failed_executed": failedRan, "unlogged_at_kill": excused}
	if twice+missing+failedRan > 0 {
		c.Verdict = report.Fail
		if len(examples) > 3 {
			examples = examples[:3]
		}
		c.Detail += " e.g.=[" + strings.Join(examples, "; ") + "]"
	}
	return c
}

// downDuring reports whether any server was down at some point of op's
// call.
func (f *fleet) downDuring(op Op) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ds := range f.downs {
		for _, d := range ds {
			if d[0] <= op.Complete && op.Invoke <= d[1] {
				return true
			}
		}
	}
	return false
}

// rightCaller checks that every OK answer names the account its call
// asked for.
func rightCaller(ops []Op) Check {
	c := Check{Name: CheckRightCaller, Verdict: report.Pass}
	var ok, wrong int
	var example string
	for _, op := range ops {
		if op.Outcome != OutcomeOK {
			continue
		}
		ok++
		if op.RespAccount != op.Account {
			wrong++
			if example == "" {
				example = fmt.Sprintf("client %d op %d asked %s, got %s's answer", op.Client, op.ID, op.Account, op.RespAccount)
			}
		}
	}
	c.Detail = fmt.Sprintf("answers=%d wrong=%d", ok, wrong)
	c.Counts = map[string]int{"answers": ok, "wrong": wrong}
	if wrong > 0 {
		c.Verdict = report.Fail
		c.Detail += " e.g.=[" + example + "]"
	}
	return c
}

// Lines returns one line per checker and the final CHAOS line.
func (r Result) Lines() []string { return r.LinesWith(nil) }

// LinesWith returns Lines with each verdict word (PASS, FAIL, UNKNOWN)
// written by verdict, as report.VerdictPainter colours it; nil writes
// Verdict.String.
func (r Result) LinesWith(verdict func(report.Verdict) string) []string {
	if verdict == nil {
		verdict = report.Verdict.String
	}
	var out []string
	for _, c := range r.Checks {
		out = append(out, fmt.Sprintf("CHECK %s %s %s", c.Name, verdict(c.Verdict), c.Detail))
	}
	last := fmt.Sprintf("CHAOS seed=%d ops=%d ok=%d failed=%d unknown=%d faults=%d verdict=%s",
		r.Options.Seed, len(r.Ops), r.OK, r.Failed, r.Unknown, r.Faults, verdict(r.Verdict))
	if r.InterruptedAfter > 0 {
		// Last, so that verdict= reads the same whether or not the run
		// was interrupted.
		last += " interrupted_after=" + r.InterruptedAfter.Round(time.Millisecond).String()
	}
	return append(out, last)
}

// Replay is ReplayAs("rpcbench").
func (r Result) Replay() string { return r.ReplayAs("rpcbench") }

// ReplayAs is the command line that replays the run: prog chaos, then
// flags (the caller's own, such as rpcbench's --server), then every
// option of the run: ReplayArgs, the output directory and the check
// timeout. A word a POSIX shell would split or expand is quoted.
func (r Result) ReplayAs(prog string, flags ...string) string {
	words := append([]string{prog, "chaos"}, flags...)
	words = append(words, r.Options.ReplayArgs()...)
	words = append(words, "--out", r.Options.Out, "--check-timeout", r.Options.CheckTimeout.String())
	for i, w := range words {
		words[i] = shellQuote(w)
	}
	return strings.Join(words, " ")
}

// shellQuote returns w as a POSIX shell reads it back: as is when it
// holds only characters no shell treats specially, else in single
// quotes.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// Failed names the checks that failed.
func (r Result) FailedChecks() []string {
	var out []string
	for _, c := range r.Checks {
		if c.Verdict == report.Fail {
			out = append(out, c.Name)
		}
	}
	return out
}

// writeResult writes the history and, on FAIL, the visualization of the
// first account that is not linearizable and its window.
func writeResult(o Options, r *Result, progress io.Writer) error {
	var b bytes.Buffer
	if err := WriteHistory(&b, r.Ops); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(o.Out, HistoryFile), b.Bytes()); err != nil {
		return err
	}
	if len(r.Linear.Failed) == 0 {
		return nil
	}
	acct := r.Linear.Failed[0]
	b.Reset()
	if err := VisualizeAccount(&b, r.Ops, acct, bank.DefaultBalance); err != nil {
		return err
	}
	html := filepath.Join(o.Out, "linear-"+acct+".html")
	if err := writeFileAtomic(html, b.Bytes()); err != nil {
		return err
	}
	b.Reset()
	if err := WriteHistory(&b, r.Linear.Window); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(o.Out, WindowFile), b.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(progress, "chaos: %s is not linearizable: %s; the violation shows between %.3fs and %.3fs: %s (ok operations completing after that are checked as unknown)\n",
		acct, html, float64(r.Linear.WindowFrom)/1e9, float64(r.Linear.WindowTo)/1e9, filepath.Join(o.Out, WindowFile))
	return nil
}
