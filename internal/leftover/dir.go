package leftover

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// MkdirTemp creates a new directory in dir, os.TempDir() when dir is
// empty, named rpcbench-<owner>-<what>-<random> after this process, and
// returns its path. The caller removes it; if this process dies first,
// the next Sweep of dir does. Where this process cannot name itself (no
// /proc), the name is rpcbench-<what>-<random>, which no Sweep removes.
func MkdirTemp(dir, what string) (string, error) {
	prefix := Prefix + "-"
	if me, err := Self(); err == nil {
		prefix = me.Name("-")
	}
	path, err := os.MkdirTemp(dir, prefix+what+"-")
	if err != nil {
		return "", fmt.Errorf("leftover: %w", err)
	}
	return path, nil
}

// Sweep removes the directories MkdirTemp made in dir, os.TempDir() when
// dir is empty, whose owner is gone, and returns their paths. It leaves
// every other entry alone: a live process's directories, those of owners
// it cannot see (Owner.Gone) and, unless this process is root, those of
// other users, which it could not remove. A directory it failed to remove
// is in its error, not in the paths.
func Sweep(dir string) ([]string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("leftover: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		o, ok := Parse(e.Name(), "-")
		if !ok || !mine(e) || !o.Gone() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, fmt.Errorf("leftover: %w", err))
			continue
		}
		removed = append(removed, path)
	}
	return removed, errors.Join(errs...)
}

// mine reports whether this process may remove directory e: it is root,
// or e is its user's.
func mine(e fs.DirEntry) bool {
	uid := os.Geteuid()
	if uid == 0 {
		return true
	}
	fi, err := e.Info()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}

// Report writes one line to w saying what a sweep removed, if anything:
// "<who>: removed what killed runs left: <what>, <what>".
func Report(w io.Writer, who string, removed []string, err error) {
	if len(removed) > 0 {
		fmt.Fprintf(w, "%s: removed what killed runs left: %s\n", who, strings.Join(removed, ", "))
	}
	if err != nil {
		fmt.Fprintf(w, "%s: removing what killed runs left: %s\n", who, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
}
