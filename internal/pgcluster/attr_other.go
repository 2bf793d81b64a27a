//go:build !linux

package pgcluster

import (
	"errors"
	"fmt"
	"syscall"
)

// procAttr has no way here to make the kernel stop the server when this
// process dies, and, to stay small, does not run it as another user.
func procAttr(runAs *account, _ syscall.Signal) (*syscall.SysProcAttr, error) {
	if runAs != nil {
		return nil, fmt.Errorf("pgcluster: running initdb and postgres as %s is supported on Linux only: %w", runAs.name, errors.ErrUnsupported)
	}
	return nil, nil
}
