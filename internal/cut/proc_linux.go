package cut

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// childAttr puts the adapter in a process group of its own, so that
// whatever it starts can be killed with it, and makes the kernel kill it
// if the thread that started it dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitGroup waits for the adapter to exit, kills what is left of its
// process group, and then reaps it, returning Wait's error. The group is
// killed before the reaping: while the adapter is a zombie its pid, which
// is its group's id, cannot be reused by an unrelated process.
func waitGroup(cmd *exec.Cmd) error {
	pid := cmd.Process.Pid
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	return cmd.Wait()
}
