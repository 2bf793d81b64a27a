//go:build !linux

package transport

import (
	"net"
	"time"
)

// setUserTimeout is Linux-only; elsewhere TCP_KEEPCNT ends the probes,
// at the same one.
func setUserTimeout(*net.TCPConn, time.Duration) error { return nil }
