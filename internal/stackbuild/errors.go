package stackbuild

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNoSuchRelease is what a *ReleaseError is: the registry has no
// release of that number.
var ErrNoSuchRelease = errors.New("stackbuild: no such release")

// ReleaseError says the registry has no release Ref, and which releases
// near it it has.
type ReleaseError struct {
	Ref Ref
	// Registry names where it was looked up ("the Go module proxy").
	Registry string
	// Nearby are the releases closest to Ref.Version, below and
	// above, oldest first.
	Nearby []string
}

func (e *ReleaseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "stackbuild: %s: %s has no release %s of %s", e.Ref, e.Registry, e.Ref.Version, e.Ref.stack().pkg)
	if len(e.Nearby) > 0 {
		fmt.Fprintf(&b, "; nearby releases: %s", strings.Join(e.Nearby, ", "))
	}
	return b.String()
}

func (e *ReleaseError) Is(target error) bool { return target == ErrNoSuchRelease }

// ErrNoToolchain is what a *ToolchainError is.
var ErrNoToolchain = errors.New("stackbuild: toolchain missing")

// ToolchainError says a tool a stack's build needs is not here, and how
// to get it.
type ToolchainError struct {
	Ref  Ref
	Tool string // "go", "npm", "python3 -m venv"
	Get  string // how to get it, as a command or a page
	Err  error  // what failed when it was looked for
}

func (e *ToolchainError) Error() string {
	return fmt.Sprintf("stackbuild: %s needs %s, which is not usable here (%v): %s", e.Ref, e.Tool, e.Err, e.Get)
}

func (e *ToolchainError) Is(target error) bool { return target == ErrNoToolchain }

func (e *ToolchainError) Unwrap() error { return e.Err }

// nearby returns up to n usable releases below want and n above it from
// releases (any order), oldest first; want itself is left out.
func nearby(releases []string, want string, n int) []string {
	sorted := slices.Clone(releases)
	slices.SortFunc(sorted, compareVersions)
	i := 0
	for i < len(sorted) && compareVersions(sorted[i], want) < 0 {
		i++
	}
	lo := max(0, i-n)
	j := i
	for j < len(sorted) && compareVersions(sorted[j], want) == 0 {
		j++
	}
	hi := min(len(sorted), j+n)
	return append(sorted[lo:i:i], sorted[j:hi]...)
}
