//go:build !linux

package server

import (
	"net"
	"time"
)

// setUserTimeout is Linux-only; elsewhere only WriteTimeout applies.
func setUserTimeout(net.Conn, time.Duration) error { return nil }
