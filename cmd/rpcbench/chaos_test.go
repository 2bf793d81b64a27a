package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/chaos"
	"github.com/rpcbench/rpcbench/internal/report"
)

// chaosApp returns a test app whose --server is a freshly built
// rpcserver, and chaos options for a short run into a test directory.
func chaosApp(t *testing.T) (*app, *bytes.Buffer, *bytes.Buffer, chaos.Options) {
	t.Helper()
	// Built before testApp leaves the module's directory.
	_, server := buildBinaries(t)
	a, stdout, stderr := testApp(t)
	a.Server = server
	o := chaos.DefaultOptions()
	o.Duration, o.Out = time.Second, filepath.Join(t.TempDir(), "chaos out")
	return a, stdout, stderr, o
}

// lockedBuffer is a goroutine-safe buffer that calls onLine (if set) with
// each line written: chaos progress comes from the run and its nemesis.
type lockedBuffer struct {
	mu     sync.Mutex // guards b
	b      bytes.Buffer
	onLine func(string)
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.onLine != nil {
		for _, l := range strings.SplitAfter(string(p), "\n") {
			if l != "" {
				w.onLine(l)
			}
		}
	}
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestChaosInterrupted: a signal during the workload stops it, and the
// history so far is checked and its verdict printed, marked as
// interrupted; the exit status is the interrupted one.
func TestChaosInterrupted(t *testing.T) {
	a, stdout, _, o := chaosApp(t)
	o.Duration = time.Minute
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	// Interrupted once the nemesis has carried out its first event: the
	// workload is running by then.
	nemesis := regexp.MustCompile(`^chaos: +\d+\.\d{3}s `)
	progress := &lockedBuffer{onLine: func(l string) {
		if nemesis.MatchString(l) {
			cancel(&signalError{os.Interrupt})
		}
	}}
	a.Err = progress
	var errOut bytes.Buffer
	code, _ := outcome(runChaos(ctx, a, o), &errOut)
	if code != exitInterrupted {
		t.Errorf("got exit code %d, want %d\nstderr:\n%s%s", code, exitInterrupted, progress, errOut.String())
	}
	callLines(t, "stdout", stdout.String(), []string{
		`CHECK linearizable PASS accounts=\d+ ops=\d+`,
		`CHECK exactly_once PASS keys=\d+ .*`,
		`CHECK right_caller PASS answers=\d+ wrong=0`,
		`CHAOS seed=1 ops=[1-9]\d* ok=\d+ failed=\d+ unknown=\d+ faults=\d+ verdict=PASS interrupted_after=\S+`,
	})
	if want := "chaos: interrupted after "; !strings.Contains(progress.String(), want) {
		t.Errorf("stderr:\n%s\nwant it to say %q", progress, want)
	}
	if got, want := errOut.String(), "rpcbench: interrupted: interrupt received\n"; got != want {
		t.Errorf("got error output %q, want %q", got, want)
	}
}

// splitReplay splits a replay line into arguments: words separated by
// spaces, a word in single quotes taken as is.
func splitReplay(t *testing.T, line string) []string {
	t.Helper()
	var args []string
	for rest := line; rest != ""; {
		rest = strings.TrimLeft(rest, " ")
		if strings.HasPrefix(rest, "'") {
			end := strings.Index(rest[1:], "'")
			if end < 0 {
				t.Fatalf("unbalanced quote in %q", line)
			}
			args, rest = append(args, rest[1:1+end]), rest[2+end:]
			continue
		}
		word, after, _ := strings.Cut(rest, " ")
		args, rest = append(args, word), after
	}
	return args
}

// TestChaosReplay: the replay line names the program that ran it and
// every option the run was given, so that running it draws the same
// schedule with the same options and files. Whether the naive client's
// run fails is timing; the line is built from any run's result, as
// runChaos builds it for a failed one.
func TestChaosReplay(t *testing.T) {
	a, _, _, o := chaosApp(t)
	o.Client, o.Faults = chaos.ClientNaive, []string{chaos.NemNoReply, chaos.NemClose, chaos.NemPartial, chaos.NemLate}
	o.Duration, o.CheckTimeout = time.Second, 7*time.Second
	run := o
	run.ServerBin, run.Progress = a.Server, io.Discard
	res, err := chaos.Run(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	replay := res.ReplayAs(replayProgram(a), replayFlags(a)...)
	args := splitReplay(t, replay)
	prog, _ := a.Executable()
	if len(args) < 2 || args[0] != prog || args[1] != "chaos" {
		t.Fatalf("got replay %q, want it to start %q chaos", replay, prog)
	}
	for _, want := range [][2]string{
		{"--server", a.Server}, {"--out", o.Out}, {"--check-timeout", "7s"}, {"--duration", "1s"},
		{"--client", "naive"}, {"--faults", "noreply,close,partial,late"}, {"--seed", "1"},
	} {
		i := strings.Index(" "+strings.Join(args, " ")+" ", " "+want[0]+" "+want[1]+" ")
		if i < 0 {
			t.Errorf("got replay %q (arguments %q), want it to pass %s %s", replay, args, want[0], want[1])
		}
	}

	// Replayed, the run writes the same schedule file: the same seed,
	// the same options.
	sched := readFile(t, filepath.Join(o.Out, chaos.ScheduleFile))
	var out, errOut bytes.Buffer
	if code := execute(context.Background(), args[1:], &out, &errOut); code != exitOK && code != exitFailed {
		t.Errorf("replay: got exit code %d, want %d or %d (a run that completed)\nstderr:\n%s", code, exitOK, exitFailed, errOut.String())
	}
	if got := readFile(t, filepath.Join(o.Out, chaos.ScheduleFile)); got != sched {
		t.Errorf("replay wrote schedule\n%s\nwant\n%s", got, sched)
	}
}

// TestChaosColor: the verdicts of the CHECK and CHAOS lines are coloured
// as CASE verdicts are, only when colour is on.
func TestChaosColor(t *testing.T) {
	a, stdout, _, o := chaosApp(t)
	o.Faults = nil
	green := regexp.QuoteMeta("\x1b[32mPASS\x1b[0m")
	tests := []struct {
		mode report.ColorMode
		want []string
	}{
		{report.ColorAlways, []string{
			`CHECK linearizable ` + green + ` .*`,
			`CHECK exactly_once ` + green + ` .*`,
			`CHECK right_caller ` + green + ` .*`,
			`CHAOS seed=1 .* verdict=` + green,
		}},
		{report.ColorNever, []string{
			`CHECK linearizable PASS .*`,
			`CHECK exactly_once PASS .*`,
			`CHECK right_caller PASS .*`,
			`CHAOS seed=1 .* verdict=PASS`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			stdout.Reset()
			a.Color = tt.mode
			if err := runChaos(context.Background(), a, o); err != nil {
				t.Fatalf("runChaos: %v", err)
			}
			callLines(t, "stdout", stdout.String(), tt.want)
		})
	}
}
