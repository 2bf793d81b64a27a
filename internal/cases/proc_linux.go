package cases

import "syscall"

// childAttr makes the kernel kill the server if the process that started
// it dies, so no rpcserver outlives an interrupted or killed run.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
