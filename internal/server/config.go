package server

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/transport"
)

// Config tunes a Server. Start from DefaultConfig; New validates it
// before any goroutine starts.
type Config struct {
	// Workers is how many business requests may execute at once: the
	// number of worker goroutines, which take requests from the queue. A
	// connection's reader executes a request itself, without queueing it,
	// when a slot is free, nothing is queued, no fault rule is configured
	// and the handler says the request cannot block. Must be at least 1.
	// Default 4.
	Workers int
	// QueueSize bounds business requests waiting for a worker; a request
	// that finds the queue full is answered UNAVAILABLE unexecuted. Must be
	// at least 1. Default 1024.
	QueueSize int
	// MaxQueuedPerConn bounds one connection's requests in the queue or
	// executing on a worker; one more is answered UNAVAILABLE unexecuted
	// (counted as conn_queue_full), so that a client that floods the
	// server cannot fill the queue for everyone. Must be at least 1.
	// Default 64.
	MaxQueuedPerConn int
	// Chunk turns on chunk mode: responses written within ChunkWindow of
	// each other are coalesced and written in random 1-13 byte pieces, one
	// write call each.
	Chunk bool
	// ChunkWindow is how long the writer gathers responses in chunk mode.
	// Must not be negative, even while Chunk is off (a negative window is
	// a mistake whether or not it is used yet), and must be positive when
	// Chunk is set. Default 2ms.
	ChunkWindow time.Duration
	// MaxConns bounds the connections open at once; one accepted beyond it
	// is closed at once (counted as conns_rejected). Must be at least 1.
	// Default 1024.
	MaxConns int
	// MaxOutBytes bounds, per connection, the bytes of answers waiting to
	// be written. While a connection is at the limit its reader stops
	// reading, so a client that sends without reading is held back by TCP
	// instead of growing the server's memory. Must be at least
	// MaxFrameLen+4, so that one answer always fits. Default 1 MiB.
	MaxOutBytes int
	// WriteTimeout bounds one write to a connection; a peer that reads
	// nothing for that long is disconnected (counted as write_timeouts).
	// Must be positive. Default 10s.
	WriteTimeout time.Duration
	// ReadTimeout bounds how long a frame may take to arrive once the
	// server has read its first bytes; a peer that trickles a frame
	// (slowloris) is disconnected past it (counted as read_timeouts).
	// Time the server spends on the frames before it, executing them or
	// waiting for the peer to read their answers, does not count. A
	// connection idle between frames has no deadline. Must be positive.
	// Default 10s.
	ReadTimeout time.Duration
	// KeepAlive is the TCP keepalive idle time: how long a connection may
	// stay silent before the kernel probes its peer, which is then
	// declared dead if it answers no probe (transport.TuneTCP states the
	// probe interval and when the kernel gives up). Zero turns keepalive
	// off: an idle connection whose peer vanished is then kept. Must not
	// be negative. Default 15s.
	KeepAlive time.Duration
	// DrainTimeout bounds the drains that ctl.drain and a drain fault
	// start (SPEC.md, "Drain"): past it the connections still open are
	// closed, their unwritten answers dropped. Zero makes those drains
	// close at once. Must not be negative. Default 5s.
	DrainTimeout time.Duration
	// Faults are rules active from the start.
	Faults []Fault
	// Control, when set, sees every control request first, on the
	// reader: if it answers (ok), that is the answer; otherwise the
	// server answers as it would without it. rpcserver's gRPC mode sets
	// it to take ctl.fault and ctl.stats requests meant for the gRPC
	// side and to clear that side's rules on ctl.clear. Nil: the
	// server's own control methods only.
	Control func(method string, payload []byte) (st proto.Status, text string, ok bool)
	// Log receives one event per connection, protocol error, expired
	// request and fault fired, named by serverapi's Event constants. Nil
	// discards.
	Log *slog.Logger
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Workers:          4,
		QueueSize:        1024,
		MaxQueuedPerConn: 64,
		ChunkWindow:      2 * time.Millisecond,
		MaxConns:         1024,
		MaxOutBytes:      1 << 20,
		WriteTimeout:     10 * time.Second,
		ReadTimeout:      10 * time.Second,
		KeepAlive:        15 * time.Second,
		DrainTimeout:     5 * time.Second,
	}
}

// ErrConfig is wrapped by every error Validate returns, a
// *transport.FieldError.
var ErrConfig = errors.New("server: invalid config")

// minOutBytes is the smallest MaxOutBytes: one largest frame.
const minOutBytes = proto.MaxFrameLen + 4

// Validate reports the first field that is out of range.
func (c *Config) Validate() error {
	bad := func(field string, v any, rule string) error {
		return &transport.FieldError{Config: ErrConfig, Field: field, Value: v, Rule: rule}
	}
	switch {
	case c.Workers < 1:
		return bad("Workers", c.Workers, "must be at least 1")
	case c.QueueSize < 1:
		return bad("QueueSize", c.QueueSize, "must be at least 1")
	case c.MaxQueuedPerConn < 1:
		return bad("MaxQueuedPerConn", c.MaxQueuedPerConn, "must be at least 1")
	case c.ChunkWindow < 0:
		return bad("ChunkWindow", c.ChunkWindow, "must not be negative")
	case c.Chunk && c.ChunkWindow == 0:
		return bad("ChunkWindow", c.ChunkWindow, "must be positive in chunk mode")
	case c.MaxConns < 1:
		return bad("MaxConns", c.MaxConns, "must be at least 1")
	case c.MaxOutBytes < minOutBytes:
		return bad("MaxOutBytes", c.MaxOutBytes, fmt.Sprintf("must be at least %d", minOutBytes))
	case c.WriteTimeout <= 0:
		return bad("WriteTimeout", c.WriteTimeout, "must be positive")
	case c.ReadTimeout <= 0:
		return bad("ReadTimeout", c.ReadTimeout, "must be positive")
	case c.KeepAlive < 0:
		return bad("KeepAlive", c.KeepAlive, "must not be negative (0 turns keepalive off)")
	case c.DrainTimeout < 0:
		return bad("DrainTimeout", c.DrainTimeout, "must not be negative")
	}
	return nil
}
