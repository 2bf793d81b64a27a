package stackbuild

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
)

// Check asks r's registry, through the stack's own toolchain, whether
// the release exists: a *ReleaseError (ErrNoSuchRelease) names nearby
// releases when it does not, a
// *ToolchainError (ErrNoToolchain) says how to get a missing tool. It
// takes a second or two: one listing of the package's releases.
// grpcio's shipped release is Debian's package, which Check looks for
// in /usr/bin/python3 instead of on PyPI.
func (r Ref) Check(ctx context.Context) error {
	st := r.stack()
	switch st.kind {
	case goModule:
		return r.checkGo(ctx, st)
	case npmPackage:
		return r.checkNPM(ctx, st)
	default:
		if r.Shipped() {
			return r.checkDebianGRPCIO(ctx)
		}
		return r.checkPyPI(ctx, st)
	}
}

// Hints for a missing toolchain.
const (
	getGo     = "install Go 1.26 or later (https://go.dev/dl/) and put it on PATH"
	getNPM    = "apt-get install nodejs npm (Node.js 20 or later, https://nodejs.org)"
	getPython = "apt-get install python3 python3-venv python3-pip (the venv and ensurepip modules)"
	getDebian = "apt-get install python3-grpcio (Debian's grpcio, run by /usr/bin/python3)"
)

// need looks up each of tools on PATH.
func (r Ref) need(get string, tools ...string) error {
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			return &ToolchainError{Ref: r, Tool: t, Get: get, Err: err}
		}
	}
	return nil
}

func (r Ref) checkGo(ctx context.Context, st stack) error {
	if err := r.need(getGo, "go"); err != nil {
		return err
	}
	// -retracted: a retracted release exists, and builds.
	out, err := tool{name: "go", args: []string{"list", "-m", "-retracted", "-versions", "-json", st.pkg},
		env: []string{"GOFLAGS=-mod=mod", "GOWORK=off", "GO111MODULE=on"}, dir: tempDir()}.run(ctx, nil)
	if err != nil {
		return fmt.Errorf("stackbuild: %s: %w", r, err)
	}
	var m struct{ Versions []string }
	if err := json.Unmarshal(out, &m); err != nil {
		return fmt.Errorf("stackbuild: go list -m -versions %s: %w", st.pkg, err)
	}
	return r.among(m.Versions, "the Go module proxy ($GOPROXY)")
}

func (r Ref) checkNPM(ctx context.Context, st stack) error {
	if err := r.need(getNPM, "node", "npm"); err != nil {
		return err
	}
	out, err := tool{name: "npm", args: []string{"view", "--json", st.pkg, "versions"}, dir: tempDir()}.run(ctx, nil)
	if err != nil {
		return fmt.Errorf("stackbuild: %s: %w", r, err)
	}
	var versions []string
	if err := json.Unmarshal(out, &versions); err != nil {
		return fmt.Errorf("stackbuild: npm view %s versions: %w", st.pkg, err)
	}
	return r.among(versions, "the npm registry")
}

// pipVersions matches the releases line of pip index versions, whose
// output is text.
var pipVersions = regexp.MustCompile(`(?m)^Available versions: (.*)$`)

// checkPyPI lists grpcio's releases on PyPI. Whether one has a wheel
// for this Python is Build's to find out: it installs wheels only
// (building grpcio from source takes most of an hour), and pip's own
// error says what it found.
func (r Ref) checkPyPI(ctx context.Context, st stack) error {
	py, err := r.python(ctx)
	if err != nil {
		return err
	}
	out, err := tool{name: py, args: []string{"-m", "pip", "index", "versions", st.pkg}, dir: tempDir()}.run(ctx, nil)
	if err != nil {
		return fmt.Errorf("stackbuild: %s: %w", r, err)
	}
	m := pipVersions.FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("stackbuild: pip index versions %s: no \"Available versions:\" line in %q", st.pkg, out)
	}
	return r.among(strings.Split(string(m[1]), ", "), "PyPI")
}

// among is nil when releases has r.Version, else a *ReleaseError
// naming its nearest neighbours there.
func (r Ref) among(releases []string, registry string) error {
	if slices.Contains(releases, r.Version) {
		return nil
	}
	return &ReleaseError{Ref: r, Registry: registry, Nearby: nearby(releases, r.Version, 3)}
}

// python is the interpreter venvs are made with, python3 on PATH, once
// it is known to have venv, ensurepip and pip.
func (r Ref) python(ctx context.Context) (string, error) {
	if err := r.need(getPython, "python3"); err != nil {
		return "", err
	}
	if _, err := (tool{name: "python3", args: []string{"-c", "import venv, ensurepip"}}).run(ctx, nil); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("stackbuild: %s: %w", r, err)
		}
		return "", &ToolchainError{Ref: r, Tool: "python3 -m venv", Get: getPython, Err: err}
	}
	return "python3", nil
}

// debianPython is the interpreter the shipped grpcio adapter runs.
const debianPython = "/usr/bin/python3"

func (r Ref) checkDebianGRPCIO(ctx context.Context) error {
	out, err := tool{name: debianPython, args: []string{"-c", "import grpc; print(grpc.__version__)"}}.run(ctx, nil)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("stackbuild: %s: %w", r, err)
		}
		return &ToolchainError{Ref: r, Tool: debianPython + " with python3-grpcio", Get: getDebian, Err: err}
	}
	if got := strings.TrimSpace(string(out)); got != r.Version {
		return &ToolchainError{Ref: r, Tool: "python3-grpcio " + r.Version, Get: getDebian,
			Err: fmt.Errorf("%s has grpcio %s", debianPython, got)}
	}
	return nil
}
