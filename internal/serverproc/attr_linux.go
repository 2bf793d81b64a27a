package serverproc

import "syscall"

// childAttr makes the kernel kill the child if the thread that started it
// dies, so no server outlives an interrupted or killed run.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
