package report

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// gitTimeout bounds each git command CollectEnv runs.
const gitTimeout = 5 * time.Second

// Env describes where a run happened; it is the content of env.txt.
// A field that could not be determined holds "unknown" and, where there
// is one, the reason.
type Env struct {
	GoVersion string // runtime.Version()
	OS, Arch  string // runtime.GOOS, runtime.GOARCH
	Kernel    string // /proc/sys/kernel/osrelease, i.e. uname -r
	CPU       string // first "model name" of /proc/cpuinfo
	Cores     int    // runtime.NumCPU(): the CPUs this process may use
	Commit    string // git rev-parse HEAD in the working directory
	Dirty     bool   // git status --porcelain printed something
	Date      time.Time
}

// CollectEnv gathers Env for this process, running git in the working
// directory. It never fails; see Env for what stands in for missing facts.
func CollectEnv(ctx context.Context) Env {
	e := Env{
		GoVersion: runtime.Version(),
		OS:        runtime.GOOS,
		Arch:      runtime.GOARCH,
		Kernel:    "unknown",
		CPU:       "unknown",
		Cores:     runtime.NumCPU(),
		Date:      time.Now().UTC(),
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		e.Kernel = strings.TrimSpace(string(b))
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		if m := cpuModel(f); m != "" {
			e.CPU = m
		}
		f.Close()
	}
	e.Commit, e.Dirty = gitState(ctx)
	return e
}

// cpuModel returns the first "model name" of a /proc/cpuinfo, or "".
func cpuModel(r io.Reader) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func gitState(ctx context.Context) (commit string, dirty bool) {
	git := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, gitTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, "git", args...).Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			// "fatal: not a git repository ..." says more than "exit status 128".
			first, _, _ := strings.Cut(strings.TrimSpace(string(ee.Stderr)), "\n")
			err = fmt.Errorf("%w: %s", err, first)
		}
		return strings.TrimSpace(string(out)), err
	}
	commit, err := git("rev-parse", "HEAD")
	if err != nil {
		return fmt.Sprintf("unknown (git rev-parse HEAD: %v)", err), false
	}
	status, err := git("status", "--porcelain")
	return commit, err == nil && status != ""
}

// WriteTo writes e as env.txt: one "key: value" line per fact.
func (e Env) WriteTo(w io.Writer) (int64, error) {
	commit := e.Commit
	if e.Dirty {
		commit += " dirty"
	}
	n, err := fmt.Fprintf(w, "go: %s\nos/arch: %s/%s\nkernel: %s\ncpu: %s\ncores: %d\ncommit: %s\ndate: %s\n",
		e.GoVersion, e.OS, e.Arch, e.Kernel, e.CPU, e.Cores, commit, e.Date.Format(time.RFC3339))
	return int64(n), err
}

// WriteEnv collects Env for this process and writes it to w as env.txt.
func WriteEnv(w io.Writer) error {
	_, err := CollectEnv(context.Background()).WriteTo(w)
	return err
}
