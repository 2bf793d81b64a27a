package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/chaos"
)

// chaosApp returns a test app whose --server is a freshly built
// rpcserver, and chaos options for a short run into a test directory.
func chaosApp(t *testing.T) (*app, *bytes.Buffer, *bytes.Buffer, chaos.Options) {
	t.Helper()
	// Built before testApp leaves the module's directory.
	server := filepath.Join(t.TempDir(), serverName)
	build := exec.CommandContext(t.Context(), "go", "build", "-o", server, "github.com/rpcbench/rpcbench/cmd/rpcserver")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build rpcserver: %v\n%s", err, out)
	}
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
