package stackbuild

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/proc"
)

// tool is one run of a toolchain command.
type tool struct {
	dir  string
	env  []string // added to this process's environment
	name string
	args []string
}

// run runs t to its end under ctx, its output going to progress (nil
// discards it), and returns its stdout. A failure quotes the end of its
// stderr; the caller says which stack it was for. The child has a process group of its own, so that npm's and
// pip's children end with it.
func (t tool) run(ctx context.Context, progress io.Writer) ([]byte, error) {
	var stdout bytes.Buffer
	var w io.Writer = &stdout
	if progress != nil {
		w = io.MultiWriter(&stdout, progress)
	}
	var env []string
	if t.env != nil {
		env = append(os.Environ(), t.env...)
	}
	p, err := proc.Start(ctx, proc.Spec{Bin: t.name, Args: t.args, Env: env, Dir: t.dir,
		Stdout: w, Stderr: progress, Group: true, Interrupt: syscall.SIGTERM, WaitDelay: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t, err)
	}
	if err := p.Err(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", t, ctx.Err())
		}
		return stdout.Bytes(), fmt.Errorf("%s: %s:\n%s", t, proc.Ended(err), p.Stderr(20))
	}
	return stdout.Bytes(), nil
}

func (t tool) String() string { return strings.Join(append([]string{t.name}, t.args...), " ") }
