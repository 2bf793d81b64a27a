package main

import (
	"fmt"
	"io"

	"github.com/rpcbench/rpcbench/internal/outfile"
)

// stdoutPath is the output path that names stdout, for every flag that
// takes an output file.
const stdoutPath = "-"

// output is where one output flag writes: stdout for stdoutPath, else a
// file that appears only once it is whole (outfile). It is opened before
// the command's work starts, so that a path that cannot be written is
// said at once.
type output struct {
	// flag is the flag as the user typed it, such as "--json".
	flag, path string
	w          io.Writer
	f          *outfile.File // nil for stdout
}

// openOutput opens flag's path, stdout being stdout. A path that cannot
// be written is a usage error naming the flag and the path as given.
func openOutput(flag, path string, stdout io.Writer) (*output, error) {
	if path == stdoutPath {
		return &output{flag: flag, path: path, w: stdout}, nil
	}
	f, err := outfile.Create(path)
	if err != nil {
		return nil, usageErrorf("", "%s %v", flag, err)
	}
	return &output{flag: flag, path: path, w: f, f: f}, nil
}

// stdout reports whether the output goes to stdout.
func (o *output) stdout() bool { return o.f == nil }

// commit moves the file into place; nothing for stdout.
func (o *output) commit() error {
	if o.f == nil {
		return nil
	}
	if err := o.f.Commit(); err != nil {
		return fmt.Errorf("%s %w", o.flag, err)
	}
	return nil
}

// abort removes the file unless commit moved it into place. It may be
// called more than once, and after commit.
func (o *output) abort() {
	if o.f != nil {
		o.f.Abort()
	}
}
