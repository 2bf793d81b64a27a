package stackbuild

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// finished writes a finished build of ref into dir, as Build leaves it,
// with m's fields over the defaults.
func finished(t *testing.T, dir string, ref Ref, edit func(*marker)) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "adapter")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := marker{Stack: ref.Stack, Version: ref.Version, Sources: sourcesDigest(), Bin: "adapter"}
	if edit != nil {
		edit(&m)
	}
	if err := writeMarker(dir, m); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestCached: only a finished build of this ref from these sources is
// trusted.
func TestCached(t *testing.T) {
	ref := Ref{"grpc-go", "v1.70.0"}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  bool
	}{
		{"finished", func(t *testing.T, dir string) { finished(t, dir, ref, nil) }, true},
		{"missing", func(t *testing.T, dir string) {}, false},
		{"no marker: an interrupted build", func(t *testing.T, dir string) {
			finished(t, dir, ref, nil)
			os.Remove(filepath.Join(dir, markerName))
		}, false},
		{"garbled marker", func(t *testing.T, dir string) {
			finished(t, dir, ref, nil)
			os.WriteFile(filepath.Join(dir, markerName), []byte(`{"stack":`), 0o644)
		}, false},
		{"other sources", func(t *testing.T, dir string) {
			finished(t, dir, ref, func(m *marker) { m.Sources = "0123456789abcdef" })
		}, false},
		{"other release", func(t *testing.T, dir string) { finished(t, dir, ref, func(m *marker) { m.Version = "v1.71.0" }) }, false},
		{"bin outside", func(t *testing.T, dir string) { finished(t, dir, ref, func(m *marker) { m.Bin = "../adapter" }) }, false},
		{"bin gone", func(t *testing.T, dir string) {
			finished(t, dir, ref, nil)
			os.Remove(filepath.Join(dir, "adapter"))
		}, false},
		{"bin not executable", func(t *testing.T, dir string) {
			finished(t, dir, ref, nil)
			os.Chmod(filepath.Join(dir, "adapter"), 0o644)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), ref.String())
			tc.setup(t, dir)
			if _, got := cached(dir, ref); got != tc.want {
				t.Errorf("cached = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestInstall: a finished build replaces a stale or unfinished one, and
// yields to a finished one that got there first.
func TestInstall(t *testing.T) {
	ref := Ref{"grpc-js", "1.10.11"}
	for _, tc := range []struct {
		name     string
		existing func(t *testing.T, final string)
		wantOurs bool
	}{
		{"none", func(t *testing.T, final string) {}, true},
		{"unfinished", func(t *testing.T, final string) {
			finished(t, final, ref, nil)
			os.Remove(filepath.Join(final, markerName))
		}, true},
		{"stale sources", func(t *testing.T, final string) { finished(t, final, ref, func(m *marker) { m.Sources = "old" }) }, true},
		{"a concurrent build's", func(t *testing.T, final string) { finished(t, final, ref, func(m *marker) { m.Took = 7 }) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := t.TempDir()
			final := filepath.Join(cache, ref.String())
			tc.existing(t, final)
			tmp := filepath.Join(cache, ".building-x")
			finished(t, tmp, ref, func(m *marker) { m.Took = 1 })
			if err := install(tmp, final, ref); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(final, markerName))
			if err != nil {
				t.Fatal(err)
			}
			if ours := strings.Contains(string(data), "\"took_s\": 1\n"); ours != tc.wantOurs {
				t.Errorf("final holds our build: %v, want %v:\n%s", ours, tc.wantOurs, data)
			}
			if _, ok := cached(final, ref); !ok {
				t.Errorf("final is not a finished build")
			}
			left, _ := filepath.Glob(filepath.Join(cache, ".stale-*"))
			if len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// TestBuildInterrupted: a build that fails part way (here: its context
// is over before the first tool runs) leaves nothing in the cache.
func TestBuildInterrupted(t *testing.T) {
	for _, name := range []string{"grpc-go", "grpc-js", "grpcio@1.62.3"} {
		t.Run(name, func(t *testing.T) {
			ref, err := Parse(name)
			if err != nil {
				t.Fatal(err)
			}
			cache := t.TempDir()
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			bin, err := Build(ctx, ref, cache, nil)
			if err == nil {
				t.Fatalf("Build under an ended context = %q, want an error", bin)
			}
			if errors.Is(err, ErrNoToolchain) {
				t.Skip(err)
			}
			left, _ := os.ReadDir(cache)
			if len(left) != 0 {
				t.Errorf("Build failed (%v) and left %v in the cache", err, left)
			}
		})
	}
}

// TestMissingToolchain: a tool missing from PATH is a *ToolchainError
// that says how to get it, before anything is built.
func TestMissingToolchain(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, tc := range []struct{ ref, tool string }{
		{"grpc-go", "go"},
		{"grpc-js@1.10.11", "node"},
		{"grpcio@1.62.3", "python3"},
	} {
		ref, err := Parse(tc.ref)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range []struct {
			name string
			do   func() error
		}{
			{"Check", func() error { return ref.Check(t.Context()) }},
			{"Build", func() error { _, err := Build(t.Context(), ref, t.TempDir(), nil); return err }},
		} {
			err := op.do()
			var te *ToolchainError
			if !errors.As(err, &te) || !errors.Is(err, ErrNoToolchain) || te.Tool != tc.tool || te.Get == "" {
				t.Errorf("%s %s without PATH: %v; want a *ToolchainError for %s", op.name, ref, err, tc.tool)
			}
		}
	}
}

// TestSweep: a build's temporary directories whose owner cannot be told
// gone are removed once old enough to be abandoned, and nothing else is.
func TestSweep(t *testing.T) {
	cache := t.TempDir()
	old := time.Now().Add(-2 * abandoned)
	elsewhere := "rpcbench-00000000-1-1-building-grpc-go@v1.71.0-4" // another boot's, whose owner cannot be told gone
	for _, name := range []string{".building-grpc-go@v1.70.0-1", ".stale-grpc-js@1.10.11-2", ".building-grpcio@1.70.0-3", "grpc-go@v1.70.0", ".other", elsewhere} {
		if err := os.Mkdir(filepath.Join(cache, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if name != ".building-grpcio@1.70.0-3" { // a build under way
			if err := os.Chtimes(filepath.Join(cache, name), old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	sweep(cache, time.Now().Add(-abandoned))
	var left []string
	entries, _ := os.ReadDir(cache)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{".building-grpcio@1.70.0-3", ".other", "grpc-go@v1.70.0"}
	if d := cmp.Diff(want, left); d != "" {
		t.Errorf("left after sweep (-want +got):\n%s", d)
	}
}
