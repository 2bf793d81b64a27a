//go:build !linux

package scenario

import "errors"

// procStatusKB needs /proc; elsewhere memory is reported as unknown.
func procStatusKB(pid int, name string) (int64, error) { return 0, errors.ErrUnsupported }
