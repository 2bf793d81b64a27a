//go:build !linux

package proc

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
)

// sysProcAttr returns how spec's child is started. There is no death
// signal here, and, to stay small, no running as another user.
func sysProcAttr(spec Spec) (*syscall.SysProcAttr, error) {
	if spec.User != nil {
		return nil, fmt.Errorf("proc: running %s as %s is supported on Linux only: %w", spec.Bin, spec.User.Name, errors.ErrUnsupported)
	}
	return &syscall.SysProcAttr{Setpgid: spec.Group}, nil
}

// waitGroup reaps the child, then kills what is left of its group.
func waitGroup(cmd *exec.Cmd) error {
	err := cmd.Wait()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return err
}
