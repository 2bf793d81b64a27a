//go:build !linux

package cut

import (
	"os/exec"
	"syscall"
)

func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// waitGroup reaps the adapter, then kills what is left of its group.
func waitGroup(cmd *exec.Cmd) error {
	err := cmd.Wait()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return err
}
