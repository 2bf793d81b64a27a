package report

import (
	"context"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestCPUModel(t *testing.T) {
	tests := []struct {
		name, cpuinfo, want string
	}{
		{"x86", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nprocessor\t: 1\nmodel name\t: other\n", "Intel(R) Xeon(R) CPU @ 2.20GHz"},
		{"no model name", "processor\t: 0\nCPU part\t: 0xd0c\n", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cpuModel(strings.NewReader(tt.cpuinfo)); got != tt.want {
				t.Errorf("cpuModel = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEnvWriteTo(t *testing.T) {
	e := Env{GoVersion: "go1.26.0", OS: "linux", Arch: "amd64", Kernel: "6.1.0", CPU: "Some CPU", Cores: 8,
		Commit: "0123abc", Dirty: true, Date: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	var b strings.Builder
	if _, err := e.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	want := "go: go1.26.0\nos/arch: linux/amd64\nkernel: 6.1.0\ncpu: Some CPU\ncores: 8\ncommit: 0123abc dirty\ndate: 2026-01-02T03:04:05Z\n"
	if got := b.String(); got != want {
		t.Errorf("WriteTo wrote\n%s\nwant\n%s", got, want)
	}
}

func TestCollectEnv(t *testing.T) {
	e := CollectEnv(context.Background())
	if e.GoVersion != runtime.Version() || e.OS != runtime.GOOS || e.Arch != runtime.GOARCH {
		t.Errorf("got %s %s/%s, want %s %s/%s", e.GoVersion, e.OS, e.Arch, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	if e.Cores != runtime.NumCPU() {
		t.Errorf("Cores = %d, want %d", e.Cores, runtime.NumCPU())
	}
	if e.Commit == "" || e.Kernel == "" || e.CPU == "" {
		t.Errorf("empty fact in %+v; want a value or \"unknown\"", e)
	}
	if time.Since(e.Date) > time.Minute {
		t.Errorf("Date = %v, want about now", e.Date)
	}
	var b strings.Builder
	if err := WriteEnv(&b); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"go:", "os/arch:", "kernel:", "cpu:", "cores:", "commit:", "date:"} {
		if !strings.Contains(b.String(), "\n"+key) && !strings.HasPrefix(b.String(), key) {
			t.Errorf("WriteEnv output lacks %q:\n%s", key, b.String())
		}
	}
}

func TestBuildState(t *testing.T) {
	info := func(settings ...string) *debug.BuildInfo {
		var b debug.BuildInfo
		for i := 0; i < len(settings); i += 2 {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return &b
	}
	tests := []struct {
		name          string
		info          *debug.BuildInfo
		stamp, sDirty string
		want          string
		wantDirty     bool
	}{
		{"build information", info("vcs.revision", "abc123", "vcs.modified", "true"), "", "", "abc123", true},
		{"clean build", info("vcs.revision", "abc123", "vcs.modified", "false"), "", "", "abc123", false},
		{"no vcs", info(), "", "", "unknown (not built from a git checkout)", false},
		{"stamp wins", info("vcs.revision", "abc123", "vcs.modified", "true"), "def456", "false", "def456", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stampedCommit, stampedDirty = tt.stamp, tt.sDirty
			defer func() { stampedCommit, stampedDirty = "", "" }()
			commit, dirty := buildState(tt.info, true)
			if commit != tt.want || dirty != tt.wantDirty {
				t.Errorf("buildState = %q, %v; want %q, %v", commit, dirty, tt.want, tt.wantDirty)
			}
		})
	}
}
