// Package outfile writes a command's output file whole or not at all:
// its path is checked before any work starts, it is written beside its
// path and renamed into place once complete.
package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// Errors that Check's and Create's *PathError wraps.
var (
	// ErrIsDir: the path names a directory.
	ErrIsDir = errors.New("is a directory")
	// ErrNoDir: the directory the file would go in does not exist, or is
	// not a directory.
	ErrNoDir = errors.New("directory does not exist")
)

// PathError is an output path that cannot be written. Its text starts
// with the path as the user typed it, never with a temporary file's name.
type PathError struct {
	// Path is the output path as given.
	Path string
	// Dir is the directory the file would go in, set for ErrNoDir.
	Dir string
	Err error
}

func (e *PathError) Error() string {
	if errors.Is(e.Err, ErrNoDir) {
		return fmt.Sprintf("%s: directory %s does not exist", e.Path, e.Dir)
	}
	return e.Path + ": " + e.Err.Error()
}

func (e *PathError) Unwrap() error { return e.Err }

// Check reports whether path can be written as an output file, without
// writing anything: it must not be a directory, and the directory it goes
// in must exist. A file already there is fine; Commit replaces it.
func Check(path string) error {
	if path == "" {
		return &PathError{Path: path, Err: errors.New("empty path")}
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return &PathError{Path: path, Err: ErrIsDir}
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) || err == nil && !fi.IsDir():
		return &PathError{Path: path, Dir: dir, Err: ErrNoDir}
	case err != nil:
		return &PathError{Path: path, Err: err}
	}
	return nil
}

// Same reports whether a and b name one file: the same path once cleaned
// and made absolute, or, for files that exist, the same file (a link).
func Same(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	if err1 == nil && err2 == nil && aa == ab {
		return true
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// File is an output file being written: a temporary file in the
// directory of its path, which Commit renames to the path. Until then the
// path keeps what it held before.
type File struct {
	*os.File
	path string
	done bool // renamed into place, or removed
}

// Create checks path (Check) and opens a temporary file beside it. The
// file is created with mode 0666 less the process's umask, as a file the
// shell's redirection makes would be.
func Create(path string) (*File, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	prefix := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	for range 100 {
		name := prefix + strconv.FormatUint(rand.Uint64(), 36)
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, &PathError{Path: path, Err: err}
		}
		return &File{File: f, path: path}, nil
	}
	return nil, &PathError{Path: path, Err: errors.New("no free temporary name beside it")}
}

// Path is the path Commit writes.
func (f *File) Path() string { return f.path }

// Commit syncs and closes the file and renames it to its path.
func (f *File) Commit() error {
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), f.path)
	}
	if err != nil {
		f.Abort()
		return &PathError{Path: f.path, Err: err}
	}
	f.done = true
	return nil
}

// Abort removes the temporary file unless Commit renamed it. It may be
// called more than once, and after Commit.
func (f *File) Abort() {
	if !f.done {
		f.Close()
		os.Remove(f.Name())
		f.done = true
	}
}
