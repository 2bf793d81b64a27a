package stackbuild

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
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

// TestCheckRegistries asks each registry about releases that do not
// exist and expects a *ReleaseError
// naming real neighbours. About 4 s: four listings.
func TestCheckRegistries(t *testing.T) {
	needBuilds(t)
	for _, tc := range []struct {
		ref    string
		nearby string // one release Nearby must name
	}{
		{"grpc-go@v1.70.5", "v1.70.0"},
		{"connect-go@v1.19.9", "v1.19.1"},
		{"grpc-js@1.10.99", "1.10.11"},
		{"grpcio@1.68.9", "1.68.1"},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			ref, err := Parse(tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			err = ref.Check(t.Context())
			re, ok := errors.AsType[*ReleaseError](err)
			if !ok || !errors.Is(err, ErrNoSuchRelease) {
				t.Fatalf("Check(%s) = %v, want a *ReleaseError", ref, err)
			}
			if !slices.Contains(re.Nearby, tc.nearby) {
				t.Errorf("Check(%s) = %v: want %s among the nearby releases", ref, err, tc.nearby)
			}
			t.Log(err)
		})
	}
}
