package stackbuild

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/cut"
)

// envStackBuild set to "1" runs the tests that really build adapters:
// they fetch from the module proxy, npm and PyPI and take minutes.
const envStackBuild = "RPCBENCH_STACKBUILD"

func needBuilds(t *testing.T) {
	t.Helper()
	if os.Getenv(envStackBuild) != "1" {
		t.Skip(envStackBuild + "=1 builds adapters against the matrix's releases (minutes, and the registries)")
	}
}

// TestMatrix builds every release of the matrix into one cache, checks
// each with its registry first, and proves each adapter answers init as
// its stack at its release (Build does that before it keeps a build).
// A second Build of each comes from the cache.
func TestMatrix(t *testing.T) {
	needBuilds(t)
	cache := t.TempDir()
	if d := os.Getenv("RPCBENCH_STACKBUILD_CACHE"); d != "" {
		cache = d // to keep the builds, and time a warm run
	}
	for _, r := range Matrix() {
		t.Run(r.Ref.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
			defer cancel()
			start := time.Now()
			if err := r.Ref.Check(ctx); err != nil {
				t.Fatal(err)
			}
			checked := time.Since(start)
			bin, err := Build(ctx, r.Ref, cache, testWriter{t})
			if err != nil {
				t.Fatal(err)
			}
			built := time.Since(start) - checked
			again, err := Build(ctx, r.Ref, cache, nil)
			if err != nil || again != bin {
				t.Fatalf("second Build = %q, %v; want the cached %q", again, err, bin)
			}
			cachedIn := time.Since(start) - checked - built
			info, err := cut.Probe(ctx, bin)
			if err != nil {
				t.Fatal(err)
			}
			caps, _ := json.Marshal(info.Caps)
			t.Logf("%s: check %.1fs, build %.1fs, cached build %.2fs: %s says %s %s on %s, %s", r.Ref, checked.Seconds(),
				built.Seconds(), cachedIn.Seconds(), bin, info.Stack, info.Version, info.Runtime, caps)
		})
	}
}

// testWriter is t.Log as an io.Writer, for a build's progress.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
