//go:build !linux

package cases

import "syscall"

func childAttr() *syscall.SysProcAttr { return nil }
