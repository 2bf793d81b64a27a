package stackbuild

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/cut"
	"github.com/rpcbench/rpcbench/internal/leftover"
)

// DefaultCacheDir is where a command keeps built adapters unless told
// otherwise: rpcbench/stacks in the user's cache directory
// ($XDG_CACHE_HOME or ~/.cache on Linux).
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("stackbuild: %w", err)
	}
	return filepath.Join(d, "rpcbench", "stacks"), nil
}

// markerName is the file a finished build leaves in its directory; a
// directory without it, or with another one's, is never used.
const markerName = "stackbuild.json"

// marker says what a cache directory holds.
type marker struct {
	Stack   string `json:"stack"`
	Version string `json:"version"`
	// Sources is the digest of the embedded adapter sources it was
	// built from: another rpcbench's sources make it stale.
	Sources string `json:"sources"`
	// Bin is the adapter, relative to the directory.
	Bin   string    `json:"bin"`
	Built time.Time `json:"built"`
	// Took is how long the build took, probe included, in seconds.
	Took float64 `json:"took_s"`
}

// Build returns the path of an adapter for ref, building it when the
// cache does not hold one: in cacheDir/<stack>@<version>/ (grpc-go@v1.70.0),
// from the sources rpcbench embeds, against that release fetched by
// the stack's toolchain. What the toolchain prints, and a line per step,
// goes to progress (nil discards it). A cold build takes from seconds
// (a Go module in the module cache) to a minute or more (npm, pip, a
// Go module to download).
//
// A build happens in a temporary directory beside its final one and is
// renamed into place only once the adapter has answered init as ref's
// stack at ref's version, so an interrupted or failed build leaves
// nothing that a later Build trusts; a directory built from other
// embedded sources is rebuilt. Two concurrent Builds of one ref both
// build, and the second to finish uses the first's. Temporary
// directories a killed build left are removed by the next Build once
// their process is gone (package leftover).
//
// Build does not ask whether the release exists: Check does, with a
// better error.
func Build(ctx context.Context, ref Ref, cacheDir string, progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	cacheDir, err := filepath.Abs(cacheDir)
	if err != nil {
		return "", fmt.Errorf("stackbuild: %w", err)
	}
	final := filepath.Join(cacheDir, ref.String())
	if bin, ok := cached(final, ref); ok {
		fmt.Fprintf(progress, "stackbuild: %s: cached in %s\n", ref, final)
		return bin, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("stackbuild: cache: %w", err)
	}
	removed, err := leftover.Sweep(cacheDir)
	leftover.Report(progress, "stackbuild", removed, err)
	sweep(cacheDir, time.Now().Add(-abandoned))
	tmp, err := leftover.MkdirTemp(cacheDir, "building-"+ref.String())
	if err != nil {
		return "", fmt.Errorf("stackbuild: cache: %w", err)
	}
	defer os.RemoveAll(tmp) // gone once renamed; what is left of a failure otherwise
	start := time.Now()
	fmt.Fprintf(progress, "stackbuild: %s: building in %s\n", ref, tmp)
	b := builder{ref: ref, dir: tmp, progress: progress}
	rel, err := b.build(ctx)
	if err != nil {
		return "", err
	}
	if err := probe(ctx, ref, filepath.Join(tmp, rel)); err != nil {
		return "", err
	}
	m := marker{Stack: ref.Stack, Version: ref.Version, Sources: sourcesDigest(), Bin: rel,
		Built: time.Now().UTC(), Took: time.Since(start).Seconds()}
	if err := writeMarker(tmp, m); err != nil {
		return "", err
	}
	if err := install(tmp, final, ref); err != nil {
		return "", err
	}
	fmt.Fprintf(progress, "stackbuild: %s: built in %.1fs into %s\n", ref, m.Took, final)
	bin, ok := cached(final, ref)
	if !ok {
		return "", fmt.Errorf("stackbuild: %s: %s is not a finished build after it was installed", ref, final)
	}
	return bin, nil
}

// abandoned is how old a temporary directory of a build must be to be
// taken for one whose process died before it could remove it, when its
// owner cannot be told gone (leftover.Owner.Gone): one made before a
// reboot or in another container, or before package leftover named them
// (.building-*, .stale-*). No build takes that long.
const abandoned = 24 * time.Hour

// sweep removes the temporary directories in cacheDir last modified
// before cutoff, what builds killed outright (SIGKILL, a crash) left.
func sweep(cacheDir string, cutoff time.Time) {
	entries, _ := os.ReadDir(cacheDir)
	for _, e := range entries {
		name := e.Name()
		_, owned := leftover.Parse(name, "-")
		if !e.IsDir() || !(owned || strings.HasPrefix(name, ".building-") || strings.HasPrefix(name, ".stale-")) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
			os.RemoveAll(filepath.Join(cacheDir, name))
		}
	}
}

// cached returns the adapter in dir when dir is a finished build of ref
// from the embedded sources.
func cached(dir string, ref Ref) (string, bool) {
	data, err := os.ReadFile(filepath.Join(dir, markerName))
	if err != nil {
		return "", false
	}
	var m marker
	if json.Unmarshal(data, &m) != nil || m.Stack != ref.Stack || m.Version != ref.Version ||
		m.Sources != sourcesDigest() || !filepath.IsLocal(m.Bin) {
		return "", false
	}
	bin := filepath.Join(dir, m.Bin)
	if fi, err := os.Stat(bin); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", false
	}
	return bin, true
}

// writeMarker writes m into dir, last of all the build's files.
func writeMarker(dir string, m marker) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, markerName), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("stackbuild: %w", err)
	}
	return nil
}

// install renames the finished build tmp to final. A final that is a
// finished build of ref already (a concurrent Build's) is kept and tmp
// dropped; a stale or unfinished one is moved aside and removed.
func install(tmp, final string, ref Ref) error {
	err := os.Rename(tmp, final)
	if err == nil {
		return nil
	}
	if _, ok := cached(final, ref); ok {
		return nil
	}
	if _, statErr := os.Stat(final); statErr != nil {
		return fmt.Errorf("stackbuild: cache: %w", err)
	}
	old, err := leftover.MkdirTemp(filepath.Dir(final), "stale-"+ref.String())
	if err != nil {
		return fmt.Errorf("stackbuild: cache: %w", err)
	}
	defer os.RemoveAll(old)
	// Into old, which must then be empty for rename to replace it.
	if err := os.Rename(final, filepath.Join(old, "d")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("stackbuild: cache: moving aside %s: %w", final, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, ok := cached(final, ref); ok {
			return nil
		}
		return fmt.Errorf("stackbuild: cache: %w", err)
	}
	return nil
}

// ErrProbe is what a *ProbeError is.
var ErrProbe = errors.New("stackbuild: built adapter is not the release asked for")

// ProbeError says a built adapter did not start, or said it was another
// stack or release than the one built.
type ProbeError struct {
	Ref            Ref
	Bin            string
	Stack, Version string // what its init_ok said; empty when it did not start
	Err            error  // why it did not start
}

func (e *ProbeError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("stackbuild: %s: the built adapter %s does not start: %v", e.Ref, e.Bin, e.Err)
	}
	return fmt.Sprintf("stackbuild: %s: the built adapter %s says it is %s %s", e.Ref, e.Bin, e.Stack, e.Version)
}

func (e *ProbeError) Is(target error) bool { return target == ErrProbe }
func (e *ProbeError) Unwrap() error        { return e.Err }

// probe starts the adapter at bin and checks its init_ok names ref.
func probe(ctx context.Context, ref Ref, bin string) error {
	info, err := cut.Probe(ctx, bin)
	if err != nil {
		return &ProbeError{Ref: ref, Bin: bin, Err: err}
	}
	if info.Stack != ref.Stack || info.Version != ref.LinkedVersion() {
		return &ProbeError{Ref: ref, Bin: bin, Stack: info.Stack, Version: info.Version}
	}
	return nil
}

// tempDir is a directory outside any module or package, for tools that
// would otherwise read the caller's go.mod or package.json.
func tempDir() string { return os.TempDir() }
