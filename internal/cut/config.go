package cut

import (
	"fmt"
	"time"
)

// Config holds the bounds the harness holds an adapter to. A zero field
// takes its value from DefaultConfig.
type Config struct {
	// InitTimeout bounds the wait for init_ok after the process starts.
	InitTimeout time.Duration
	// CallGrace is how long past a call's deadline the adapter has to
	// answer it before it is Hung.
	CallGrace time.Duration
	// ShutdownTimeout bounds the wait for shutdown_ok.
	ShutdownTimeout time.Duration
	// ExitGrace is how long the adapter has to exit once its stdin is
	// closed, before SIGTERM goes to its process group.
	ExitGrace time.Duration
	// KillGrace is how long after SIGTERM the group has before SIGKILL.
	KillGrace time.Duration
}

// DefaultConfig returns the protocol's bounds (adapters/PROTOCOL.md).
func DefaultConfig() Config {
	return Config{
		InitTimeout:     10 * time.Second,
		CallGrace:       5 * time.Second,
		ShutdownTimeout: 3 * time.Second,
		ExitGrace:       time.Second,
		KillGrace:       time.Second,
	}
}

// withDefaults fills c's zero fields from DefaultConfig and rejects a
// negative one.
func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	for _, f := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"InitTimeout", &c.InitTimeout, d.InitTimeout},
		{"CallGrace", &c.CallGrace, d.CallGrace},
		{"ShutdownTimeout", &c.ShutdownTimeout, d.ShutdownTimeout},
		{"ExitGrace", &c.ExitGrace, d.ExitGrace},
		{"KillGrace", &c.KillGrace, d.KillGrace},
	} {
		switch {
		case *f.v < 0:
			return c, fmt.Errorf("cut: Config.%s %v < 0", f.name, *f.v)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	return c, nil
}
