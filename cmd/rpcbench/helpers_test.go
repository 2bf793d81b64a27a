package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/leftover"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/testexit"
)

// fakeRuns records the scenarios a test ran, in order, with their Env.
type fakeRuns struct {
	mu   sync.Mutex // guards runs
	runs []fakeRun
}

type fakeRun struct {
	Name string
	Env  scenario.Env
}

func (r *fakeRuns) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, run := range r.runs {
		out = append(out, run.Name)
	}
	return out
}

// fake returns a scenario that records its run and returns a line with
// the given verdict and fields; it writes its server log into the log
// directory as a real one would.
func (r *fakeRuns) fake(name, group string, pass bool, fields ...report.Field) scenario.Case {
	return scenario.Fake(name, group, "proves "+name, func(_ context.Context, env scenario.Env) report.Line {
		r.mu.Lock()
		r.runs = append(r.runs, fakeRun{name, env})
		r.mu.Unlock()
		if env.LogDir != "" {
			_ = os.WriteFile(filepath.Join(env.LogDir, "server-"+name+".log"), []byte("log\n"), 0o644)
		}
		return report.Line{Name: name, Verdict: report.PassIf(pass), Fields: fields}
	})
}

// testApp returns an app over list whose default rpcserver exists (an
// empty executable file next to a pretend rpcbench), writing to the
// returned buffers. The working directory is a fresh temporary one, so
// the default "evidence" directory lands there.
func testApp(t *testing.T, list ...scenario.Case) (a *app, stdout, stderr *bytes.Buffer) {
	t.Helper()
	t.Chdir(t.TempDir())
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, serverName), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	a = &app{
		Out:        stdout,
		Err:        stderr,
		Scenarios:  list,
		Executable: func() (string, error) { return filepath.Join(bin, "rpcbench"), nil },
	}
	return a, stdout, stderr
}

// outcome is what a test checks about a finished command: its exit code
// and what it printed on stderr, the way main would print it.
func outcome(err error, stderr *bytes.Buffer) (int, string) {
	printError(stderr, err)
	return exitCode(err), stderr.String()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// built holds the binaries buildBinaries built, once for the test binary:
// a dozen tests run the real rpcbench and rpcserver, and each build
// links both (a second or two each, under -race's load more).
var built struct {
	once              sync.Once
	dir               string
	rpcbench, rpcserv string
	err               error
}

// TestMain removes what buildBinaries built once every test has run.
func TestMain(m *testing.M) {
	switch {
	case os.Getenv(envProxyWorkload) != "":
		os.Exit(proxyWorkload())
	case os.Getenv(envShopAddr) != "":
		os.Exit(shopService())
	case os.Getenv(envShopWorkload) != "":
		os.Exit(shopWorkload())
	}
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	testexit.Exit(code)
}

// buildBinaries returns rpcbench and rpcserver built from this module,
// into a temporary directory of the test binary's, built on the first
// call. Tests may read and run them and make directories beside them,
// never change them.
func buildBinaries(t *testing.T) (rpcbench, rpcserver string) {
	t.Helper()
	built.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			built.err = fmt.Errorf("the go command is needed to build the binaries: %w", err)
			return
		}
		// The binaries go in a directory of a private one, never straight
		// in TMPDIR: a test opens theirs and its parent to other users
		// (TestNetworkSkipsWithoutRoot), which must not be TMPDIR itself.
		if built.dir, err = leftover.MkdirTemp("", "bin"); err != nil {
			built.err = err
			return
		}
		bin := filepath.Join(built.dir, "bin")
		if err := os.Mkdir(bin, 0o700); err != nil {
			built.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin+"/",
			"github.com/rpcbench/rpcbench/cmd/rpcbench", "github.com/rpcbench/rpcbench/cmd/rpcserver")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		built.rpcbench, built.rpcserv = filepath.Join(bin, "rpcbench"), filepath.Join(bin, serverName)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.rpcbench, built.rpcserv
}
