package pgcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrNotFound is wrapped by Start's error when there is no server to use:
// RPCBENCH_PG_DSN is unset and the server binaries are not installed.
var ErrNotFound = errors.New("pgcluster: PostgreSQL server binaries (initdb, postgres) not found; " +
	"install them (Debian: apt-get install postgresql), name their directory in " + EnvBin +
	", or set " + EnvDSN + " to an existing server")

// debianBins is where Debian and Ubuntu install each major version's server
// binaries, outside PATH.
const debianBins = "/usr/lib/postgresql/*/bin"

// bins are the server programs a cluster is made with.
type bins struct {
	initdb, postgres string
}

// finder says where to look for the server programs.
type finder struct {
	// dir, when not empty, is the only directory looked in.
	dir string
	// lookPath finds a program in PATH, as exec.LookPath does.
	lookPath func(name string) (string, error)
	// glob matches candidate directories, one per version; the single *
	// in it is the version.
	glob string
}

func defaultFinder() finder {
	return finder{dir: os.Getenv(EnvBin), lookPath: exec.LookPath, glob: debianBins}
}

// find returns the programs from the first place holding both: dir alone
// when set, else PATH, else the highest version matched by glob. Its error
// wraps ErrNotFound and names the places looked in.
func (f finder) find() (bins, error) {
	if f.dir != "" {
		if b, ok := inDir(f.dir); ok {
			return b, nil
		}
		return bins{}, fmt.Errorf("%w (looked in %s=%s)", ErrNotFound, EnvBin, f.dir)
	}
	initdb, err1 := f.lookPath("initdb")
	postgres, err2 := f.lookPath("postgres")
	if err1 == nil && err2 == nil {
		return bins{initdb: initdb, postgres: postgres}, nil
	}
	dirs, err := filepath.Glob(f.glob)
	if err != nil {
		return bins{}, fmt.Errorf("pgcluster: %s: %w", f.glob, err)
	}
	prefix, _, _ := strings.Cut(f.glob, "*")
	// Highest version first, compared as numbers so that 15 is above 9.6.
	slices.SortFunc(dirs, func(a, b string) int {
		return slices.Compare(versionOf(b, prefix), versionOf(a, prefix))
	})
	for _, d := range dirs {
		if b, ok := inDir(d); ok {
			return b, nil
		}
	}
	return bins{}, fmt.Errorf("%w (looked in PATH and %s)", ErrNotFound, f.glob)
}

func inDir(dir string) (bins, bool) {
	b := bins{initdb: filepath.Join(dir, "initdb"), postgres: filepath.Join(dir, "postgres")}
	return b, isExecutable(b.initdb) && isExecutable(b.postgres)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// versionOf returns the dotted numbers that the glob's * matched in dir:
// [9 6] for /usr/lib/postgresql/9.6/bin. A part that is not a number is -1.
func versionOf(dir, prefix string) []int {
	v, _, _ := strings.Cut(strings.TrimPrefix(dir, prefix), string(filepath.Separator))
	var nums []int
	for part := range strings.SplitSeq(v, ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			n = -1
		}
		nums = append(nums, n)
	}
	return nums
}
