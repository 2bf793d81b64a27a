//go:build !linux

package serverproc

import "syscall"

func childAttr() *syscall.SysProcAttr { return nil }
