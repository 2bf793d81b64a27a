package pgcluster

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// install makes dir/bin holding the named programs, with the given mode.
func install(t *testing.T, dir string, mode os.FileMode, names ...string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(bin, n), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

func TestFind(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"9.6", "10", "15"} {
		install(t, filepath.Join(root, v), 0o755, "initdb", "postgres")
	}
	install(t, filepath.Join(root, "16"), 0o755, "initdb")                // incomplete
	install(t, filepath.Join(root, "17"), 0o644, "initdb", "postgres")    // not executable
	install(t, filepath.Join(root, "devel"), 0o755, "initdb", "postgres") // not a version
	own := install(t, filepath.Join(t.TempDir(), "own"), 0o755, "initdb", "postgres")
	glob := filepath.Join(root, "*", "bin")

	inPath := func(names ...string) func(string) (string, error) {
		return func(name string) (string, error) {
			for _, n := range names {
				if n == name {
					return "/path/" + name, nil
				}
			}
			return "", exec.ErrNotFound
		}
	}
	tests := []struct {
		name    string
		f       finder
		wantDir string // empty: want ErrNotFound
	}{
		{"highest_complete_version", finder{lookPath: inPath(), glob: glob}, filepath.Join(root, "15", "bin")},
		{"path_first", finder{lookPath: inPath("initdb", "postgres"), glob: glob}, "/path"},
		{"path_needs_both", finder{lookPath: inPath("initdb"), glob: glob}, filepath.Join(root, "15", "bin")},
		{"bin_dir", finder{dir: own, lookPath: inPath("initdb", "postgres"), glob: glob}, own},
		{"bin_dir_only", finder{dir: root, lookPath: inPath("initdb", "postgres"), glob: glob}, ""},
		{"none", finder{lookPath: inPath(), glob: filepath.Join(t.TempDir(), "*", "bin")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.f.find()
			if tt.wantDir == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("find() = %+v, %v; want ErrNotFound", b, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := bins{initdb: filepath.Join(tt.wantDir, "initdb"), postgres: filepath.Join(tt.wantDir, "postgres")}
			if b != want {
				t.Errorf("find() = %+v, want %+v", b, want)
			}
		})
	}
}

// TestStartNotFound checks the error a caller without PostgreSQL meets: it
// wraps ErrNotFound and says how to get a server.
func TestStartNotFound(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv(EnvDSN, "")
	t.Setenv(EnvBin, t.TempDir())
	t.Setenv("TMPDIR", tmp)
	c, err := Start(t.Context())
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Start() = %v, %v; want ErrNotFound", c, err)
	}
	for _, want := range []string{"apt-get install postgresql", EnvDSN, EnvBin} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	assertEmpty(t, tmp)
}

// assertEmpty fails t if dir holds anything.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind: %s", filepath.Join(dir, e.Name()))
	}
}
