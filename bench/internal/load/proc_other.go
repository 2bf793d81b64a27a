//go:build !linux

package load

import (
	"errors"
	"time"
)

var errNoCPU = errors.New("load: CPU time is measured on Linux only")

func selfCPU() (time.Duration, error) { return 0, errNoCPU }

func procCPU(int) (time.Duration, error) { return 0, errNoCPU }

func procRSS(int) (int64, error) { return 0, errNoMemory }

func procMaxFiles(int) (int64, error) { return 0, errNoMemory }

func openFiles() (int, error) { return 0, errNoMemory }

func raiseNoFile(uint64) (uint64, error) { return 0, errNoMemory }

var errNoMemory = errors.New("load: the conns-memory measurement runs on Linux only")
