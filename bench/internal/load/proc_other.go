//go:build !linux

package load

import (
	"errors"
	"time"
)

var errNoCPU = errors.New("load: CPU time is measured on Linux only")

func selfCPU() (time.Duration, error) { return 0, errNoCPU }

func procCPU(int) (time.Duration, error) { return 0, errNoCPU }
