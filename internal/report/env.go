package report

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Env describes where a run happened; it is the content of env.txt.
// A field that could not be determined holds "unknown" and, where there
// is one, the reason.
type Env struct {
	GoVersion string // runtime.Version()
	OS, Arch  string // runtime.GOOS, runtime.GOARCH
	Kernel    string // /proc/sys/kernel/osrelease, i.e. uname -r
	CPU       string // first "model name" of /proc/cpuinfo
	Cores     int    // runtime.NumCPU(): the CPUs this process may use
	Commit    string // the commit the binary was built from (see buildState)
	Dirty     bool   // that tree had local changes outside evidence/
	Date      time.Time
}

// CollectEnv gathers Env for this process. It never fails; see Env for
// what stands in for missing facts.
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
	e.Commit, e.Dirty = buildState(debug.ReadBuildInfo())
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

// Stamped by the build (go build -ldflags "-X ..."): run.sh and .ci/run
// set them from git, leaving evidence/ out of the dirty check, because a
// run's own evidence files would otherwise mark every later build dirty.
var (
	stampedCommit string
	stampedDirty  string // "true" or "false"
)

// buildState returns the commit the running binary was built from, and
// whether its tree had local changes: the stamp when there is one, else
// the build information Go records (vcs.revision, vcs.modified), else
// "unknown". It does not look at the working directory, which may be
// another repository or none.
func buildState(info *debug.BuildInfo, ok bool) (commit string, dirty bool) {
	if stampedCommit != "" {
		return stampedCommit, stampedDirty == "true"
	}
	if !ok {
		return "unknown (no build information)", false
	}
	commit = "unknown (not built from a git checkout)"
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	return commit, dirty
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

// Version describes the running binary: its module version, the commit
// it was built from (with " dirty" for local changes) and its Go version.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	commit, dirty := buildState(info, ok)
	if dirty {
		commit += " dirty"
	}
	module, gover := "(unknown)", runtime.Version()
	if ok {
		module = info.Main.Version
		if module == "" {
			module = "(devel)"
		}
		gover = info.GoVersion
	}
	return fmt.Sprintf("%s commit %s %s", module, commit, gover)
}
