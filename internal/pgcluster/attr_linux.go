package pgcluster

import "syscall"

// procAttr returns how initdb and postgres are started: as runAs when it
// is not nil; in a process group of their own, so that a Ctrl-C meant for
// this process does not shut the server down under it; and sent deathSig
// by the kernel when this process dies. Strictly, Pdeathsig fires when the
// thread that started the child exits; the Go runtime ends a thread only
// when a goroutine locked to it returns (golang/go#27505), which this
// package never does.
func procAttr(runAs *account, deathSig syscall.Signal) (*syscall.SysProcAttr, error) {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSig}
	if runAs != nil {
		a.Credential = &syscall.Credential{Uid: runAs.uid, Gid: runAs.gid}
	}
	return a, nil
}
