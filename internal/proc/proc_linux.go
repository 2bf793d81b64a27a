package proc

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr returns how spec's child is started. Strictly, Pdeathsig
// fires when the thread that started the child exits; the Go runtime
// ends a thread only when a goroutine locked to it returns
// (golang/go#27505), which nothing here does.
func sysProcAttr(spec Spec) (*syscall.SysProcAttr, error) {
	sig := spec.DeathSignal
	if sig == 0 {
		sig = syscall.SIGKILL
	}
	a := &syscall.SysProcAttr{Setpgid: spec.Group, Pdeathsig: sig}
	if spec.User != nil {
		a.Credential = &syscall.Credential{Uid: spec.User.UID, Gid: spec.User.GID}
	}
	return a, nil
}

// waitGroup waits for the child to exit, kills what is left of its
// process group, and then reaps it, returning Wait's error. The group is
// killed before the reaping: while the child is a zombie its pid, which
// is its group's id, cannot be reused by an unrelated process.
func waitGroup(cmd *exec.Cmd) error {
	pid := cmd.Process.Pid
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	return cmd.Wait()
}
