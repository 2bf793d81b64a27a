package stackbuild

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Ref names one stack at one release.
type Ref struct {
	// Stack is the stack's name as its adapter's init_ok says it:
	// grpc-go, connect-go, grpc-js or grpcio.
	Stack string
	// Version is the release as its registry spells it: with a "v" for
	// Go modules (v1.70.0), without for npm and PyPI (1.10.11, 1.68.1).
	Version string
}

// String is the reference as Parse takes it: "grpc-go@v1.70.0".
func (r Ref) String() string { return r.Stack + "@" + r.Version }

// Shipped reports whether r is the release the repository's adapter is
// built against (grpcio's is Debian's python3-grpcio).
func (r Ref) Shipped() bool { return r.Version == r.stack().shipped() }

// LinkedVersion is the version the adapter's init_ok reports for r:
// Version without the leading "v" Go modules have.
func (r Ref) LinkedVersion() string { return strings.TrimPrefix(r.Version, "v") }

// kind is the toolchain that builds a stack.
type kind int

const (
	goModule    kind = iota // go build against a module from the module proxy
	npmPackage              // npm install from the npm registry
	pypiPackage             // pip install into a venv from PyPI
)

// stack is one stack stackbuild knows how to build.
type stack struct {
	name    string
	kind    kind
	pkg     string // the module or package the stack is
	adapter string // its adapter's directory under adapters/
	bin     string // the adapter's file name, as ./build.sh names it in bin/
	// floor is the oldest release the adapter is known to build and run
	// against (at or below Matrix's oldest); Parse refuses older ones.
	floor   string
	shipped func() string
}

// stacks are every stack, in the order errors list them.
var stacks = []stack{
	{name: "grpc-go", kind: goModule, pkg: "google.golang.org/grpc", adapter: "grpcgo", bin: "adapter-grpcgo",
		floor: "v1.60.0", shipped: func() string { return goRequire("grpcgo", "google.golang.org/grpc") }},
	{name: "connect-go", kind: goModule, pkg: "connectrpc.com/connect", adapter: "connectgo", bin: "adapter-connectgo",
		floor: "v1.19.0", shipped: func() string { return goRequire("connectgo", "connectrpc.com/connect") }},
	{name: "grpc-js", kind: npmPackage, pkg: "@grpc/grpc-js", adapter: "grpcjs", bin: "adapter-grpcjs",
		floor: "1.8.0", shipped: npmShipped},
	// grpcio's shipped release is Debian's python3-grpcio (bookworm),
	// which the repository's adapter runs under /usr/bin/python3; every
	// other release comes from PyPI into a venv.
	{name: "grpcio", kind: pypiPackage, pkg: "grpcio", adapter: "grpcio", bin: "adapter-grpcio",
		floor: "1.51.0", shipped: func() string { return DebianGRPCIO }},
}

// DebianGRPCIO is the grpcio release of Debian 12's python3-grpcio, the
// one adapters/grpcio is written against and grpcio's shipped release.
const DebianGRPCIO = "1.51.1"

// Stacks returns the names Parse takes, in order.
func Stacks() []string {
	names := make([]string, len(stacks))
	for i, s := range stacks {
		names[i] = s.name
	}
	return names
}

func lookup(name string) (stack, bool) {
	for _, s := range stacks {
		if s.name == name {
			return s, true
		}
	}
	return stack{}, false
}

// stack is r's stack; r came from Parse, so it is known.
func (r Ref) stack() stack {
	s, ok := lookup(r.Stack)
	if !ok {
		panic("stackbuild: Ref not from Parse: " + r.String())
	}
	return s
}

// goVersion and plainVersion are the release spellings Parse takes: a
// full semantic version (a pre-release allowed for Go, v1.86.0-dev), and
// npm's or PyPI's release numbers (1.68.1, 1.60.0rc1).
var (
	goVersion    = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)
	npmVersion   = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)
	pypiVersion  = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?((a|b|rc)[0-9]+)?(\.post[0-9]+)?$`)
	versionOfKin = map[kind]*regexp.Regexp{goModule: goVersion, npmPackage: npmVersion, pypiPackage: pypiVersion}
)

// Parse reads "NAME@VERSION" or "NAME" (the shipped release). A Go
// module's version may be given without its "v". Every error it returns
// wraps ErrUsage and names what is valid: an unknown stack, a malformed
// version, or a release older than the oldest the adapter supports.
func Parse(s string) (Ref, error) {
	name, version, hasVersion := strings.Cut(s, "@")
	st, ok := lookup(name)
	if !ok {
		return Ref{}, usagef("stackbuild: unknown stack %q in %q: valid stacks are %s, each as NAME or NAME@VERSION",
			name, s, strings.Join(Stacks(), ", "))
	}
	if !hasVersion {
		return Ref{Stack: name, Version: st.shipped()}, nil
	}
	if st.kind == goModule && !strings.HasPrefix(version, "v") {
		version = "v" + version
	} else if st.kind != goModule {
		version = strings.TrimPrefix(version, "v")
	}
	if !versionOfKin[st.kind].MatchString(version) {
		return Ref{}, usagef("stackbuild: %q: %q is not a release of %s: give a full release number such as %s@%s",
			s, version, st.pkg, name, st.shipped())
	}
	if compareVersions(version, st.floor) < 0 {
		return Ref{}, usagef("stackbuild: %q: the %s adapter supports %s %s and later (%s is the shipped release)",
			s, name, st.pkg, st.floor, st.shipped())
	}
	return Ref{Stack: name, Version: version}, nil
}

// compareVersions orders two release numbers of one stack by their
// numeric parts, "v" ignored; a release with a suffix (a Go or npm
// pre-release, a PyPI rc) comes before the same numbers without one, and
// suffixes compare as text.
func compareVersions(a, b string) int {
	na, sa := splitVersion(a)
	nb, sb := splitVersion(b)
	for i := 0; i < max(len(na), len(nb)); i++ {
		var x, y int
		if i < len(na) {
			x = na[i]
		}
		if i < len(nb) {
			y = nb[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case sa == sb:
		return 0
	case sa == "":
		return 1
	case sb == "":
		return -1
	case sa < sb:
		return -1
	}
	return 1
}

// splitVersion is v's leading dotted numbers and the rest.
func splitVersion(v string) ([]int, string) {
	v = strings.TrimPrefix(v, "v")
	var nums []int
	for {
		end := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
		if end == -1 {
			end = len(v)
		}
		if end == 0 {
			return nums, v
		}
		n, _ := strconv.Atoi(v[:end])
		nums = append(nums, n)
		v = v[end:]
		if !strings.HasPrefix(v, ".") || len(v) < 2 || v[1] < '0' || v[1] > '9' {
			return nums, v
		}
		v = v[1:]
	}
}

// ErrUsage is wrapped by the errors of Parse: the reference a user gave
// is wrong, which a command reports as a usage error (exit status 2).
var ErrUsage = errors.New("stackbuild: bad stack reference")

type usageError struct{ msg string }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }
