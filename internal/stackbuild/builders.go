package stackbuild

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// builder builds one ref's adapter in dir, a fresh directory.
type builder struct {
	ref      Ref
	dir      string
	progress io.Writer // never nil
}

// build builds the adapter and returns its path relative to b.dir.
func (b builder) build(ctx context.Context) (string, error) {
	st := b.ref.stack()
	switch {
	case st.kind == goModule:
		return b.goBuild(ctx, st)
	case st.kind == npmPackage:
		return b.npmBuild(ctx, st)
	case b.ref.Shipped():
		return b.debianGRPCIO(st)
	default:
		return b.venvBuild(ctx, st)
	}
}

func (b builder) step(format string, args ...any) {
	fmt.Fprintf(b.progress, "stackbuild: %s: %s\n", b.ref, fmt.Sprintf(format, args...))
}

func (b builder) run(ctx context.Context, t tool) error {
	b.step("%s", t)
	if _, err := t.run(ctx, b.progress); err != nil {
		return fmt.Errorf("stackbuild: %s: %w", b.ref, err)
	}
	return nil
}

// goEnv keeps a user's go.work and GOFLAGS out of the build, and lets
// go mod tidy fetch what the release needs.
var goEnv = []string{"GOFLAGS=-mod=mod", "GOWORK=off", "GO111MODULE=on"}

// goTags are the build tags that pick the adapter sources' variants for
// a grpc-go release older than the API they use by default (see
// adapters/gokit/gen.sh and adapters/grpcgo/newclient_pre163.go).
func goTags(ref Ref) []string {
	if ref.Stack != "grpc-go" {
		return nil
	}
	var tags []string
	if compareVersions(ref.Version, "v1.63.0") < 0 {
		tags = append(tags, "grpcgo_pre163") // no grpc.NewClient
	}
	if compareVersions(ref.Version, "v1.64.0") < 0 {
		tags = append(tags, "grpcgo_pre164") // no grpc.SupportPackageIsVersion9
	}
	return tags
}

// goBuild copies gokit and the adapter's module, requires the release
// in both (gokit's own requirement would otherwise win, being higher),
// lets go mod tidy settle go.sum, and builds.
func (b builder) goBuild(ctx context.Context, st stack) (string, error) {
	if err := b.ref.need(getGo, "go"); err != nil {
		return "", err
	}
	src := filepath.Join(b.dir, "src")
	if err := extract(src, "gokit", st.adapter); err != nil {
		return "", err
	}
	for _, m := range []string{"gokit", st.adapter} {
		t := tool{name: "go", args: []string{"mod", "edit", "-require=" + st.pkg + "@" + b.ref.Version},
			dir: filepath.Join(src, m), env: goEnv}
		if err := b.run(ctx, t); err != nil {
			return "", err
		}
	}
	mod := filepath.Join(src, st.adapter)
	if err := b.run(ctx, tool{name: "go", args: []string{"mod", "tidy"}, dir: mod, env: goEnv}); err != nil {
		return "", err
	}
	args := []string{"build", "-buildvcs=false", "-o", filepath.Join(b.dir, st.bin)}
	if tags := goTags(b.ref); len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	if err := b.run(ctx, tool{name: "go", args: append(args, "."), dir: mod, env: goEnv}); err != nil {
		return "", err
	}
	return st.bin, nil
}

// npmEnv keeps npm's notices out of the progress.
var npmEnv = []string{"npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false"}

// npmBuild copies the adapter and installs exactly the release into its
// node_modules, with a lockfile of its own; the shipped release is
// installed from the committed lockfile, as ./build.sh does.
func (b builder) npmBuild(ctx context.Context, st stack) (string, error) {
	if err := b.ref.need(getNPM, "node", "npm"); err != nil {
		return "", err
	}
	if err := extract(b.dir, st.adapter); err != nil {
		return "", err
	}
	dir := filepath.Join(b.dir, st.adapter)
	t := tool{name: "npm", args: []string{"ci", "--no-audit", "--no-fund"}, dir: dir, env: npmEnv}
	if !b.ref.Shipped() {
		if err := os.Remove(filepath.Join(dir, "package-lock.json")); err != nil {
			return "", fmt.Errorf("stackbuild: %w", err)
		}
		t.args = []string{"install", "--no-audit", "--no-fund", "--save-exact", st.pkg + "@" + b.ref.Version}
	}
	if err := b.run(ctx, t); err != nil {
		return "", err
	}
	return filepath.Join(st.adapter, st.bin), nil
}

// debianGRPCIO is the shipped grpcio adapter as it is, with its own
// wrapper, which runs /usr/bin/python3 and Debian's python3-grpcio.
func (b builder) debianGRPCIO(st stack) (string, error) {
	if err := extract(b.dir, st.adapter); err != nil {
		return "", err
	}
	return filepath.Join(st.adapter, st.bin), nil
}

// venvWrapper runs the adapter with the venv's interpreter, wherever
// the directory is.
const venvWrapper = `#!/bin/sh
# Runs the grpcio adapter with the grpcio release in venv/ beside this
# script (internal/stackbuild made both).
dir=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd) || exit 1
exec "$dir/venv/bin/python" "$dir/grpcio/adapter.py" "$@"
`

// venvBuild makes a venv with python3 on PATH and installs the release's
// wheel into it (no source builds: --only-binary).
func (b builder) venvBuild(ctx context.Context, st stack) (string, error) {
	py, err := b.ref.python(ctx)
	if err != nil {
		return "", err
	}
	if err := extract(b.dir, st.adapter); err != nil {
		return "", err
	}
	venv := filepath.Join(b.dir, "venv")
	if err := b.run(ctx, tool{name: py, args: []string{"-m", "venv", venv}}); err != nil {
		return "", err
	}
	t := tool{name: filepath.Join(venv, "bin", "python"), args: []string{"-m", "pip", "install", "--no-input",
		"--disable-pip-version-check", "--only-binary=:all:", st.pkg + "==" + b.ref.Version}}
	if err := b.run(ctx, t); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(b.dir, st.bin), []byte(venvWrapper), 0o755); err != nil {
		return "", fmt.Errorf("stackbuild: %w", err)
	}
	return st.bin, nil
}
