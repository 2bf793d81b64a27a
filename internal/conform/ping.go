package conform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// PingFailure is what the server did instead of answering the first
// ctl.ping with OK.
type PingFailure int

const (
	// PingRefused: the dial was refused; nothing listens at the address.
	PingRefused PingFailure = iota + 1
	// PingDialFailed: the dial failed otherwise (no such host, no route,
	// no answer to the handshake within the timeout).
	PingDialFailed
	// PingSilent: the connection was accepted and no answer came within
	// the timeout.
	PingSilent
	// PingClosed: the connection was accepted, then closed or reset
	// without an answer.
	PingClosed
	// PingHTTP: the server answered with bytes that start as an HTTP
	// response does.
	PingHTTP
	// PingNotFrame: the server answered with bytes that are not a frame.
	PingNotFrame
	// PingBadAnswer: the server answered with a frame, but not the OK
	// answer to the ping (another status, another ID, a bad field).
	PingBadAnswer
)

var pingFailureNames = [...]string{
	PingRefused:    "refused",
	PingDialFailed: "dial_failed",
	PingSilent:     "silent",
	PingClosed:     "closed",
	PingHTTP:       "http",
	PingNotFrame:   "not_a_frame",
	PingBadAnswer:  "bad_answer",
}

func (f PingFailure) String() string {
	if f > 0 && int(f) < len(pingFailureNames) {
		return pingFailureNames[f]
	}
	return fmt.Sprintf("UNKNOWN_PING_FAILURE_%d", int(f))
}

// PingError is Run's error when the first ctl.ping was not answered OK.
// It wraps ErrPing and the error the ping ended with.
type PingError struct {
	Addr    string
	Failure PingFailure
	// Head is the first bytes the server sent (at most 64), nil when it
	// sent none.
	Head []byte
	// Timeout is Config.Timeout, the time the ping was given.
	Timeout time.Duration
	Err     error
}

func (e *PingError) Error() string {
	return fmt.Sprintf("conform: %s: %s", e.Addr, e.what())
}

// what says, for a person, what the server did instead of answering.
func (e *PingError) what() string {
	switch e.Failure {
	case PingRefused:
		return "connection refused: is the server running, and listening on this address?"
	case PingDialFailed:
		return fmt.Sprintf("cannot connect: %v", e.Err)
	case PingSilent:
		if len(e.Head) > 0 {
			return fmt.Sprintf("accepted the connection and sent %s, not a whole frame, then nothing more within %v", showBytes(e.Head), e.Timeout)
		}
		return fmt.Sprintf("accepted the connection but did not answer ctl.ping within %v", e.Timeout)
	case PingClosed:
		if len(e.Head) > 0 {
			return fmt.Sprintf("accepted the connection, sent %s, not a whole frame, and closed it", showBytes(e.Head))
		}
		return "accepted the connection and closed it without answering ctl.ping"
	case PingHTTP:
		return fmt.Sprintf("answered ctl.ping with bytes that look like HTTP (%q): is this an HTTP server?", firstLine(e.Head))
	case PingNotFrame:
		return fmt.Sprintf("answered ctl.ping with bytes that are not a frame: %s: %v", showBytes(e.Head), e.Err)
	}
	return fmt.Sprintf("did not answer ctl.ping OK: %v", e.Err)
}

func (e *PingError) Unwrap() []error { return []error{ErrPing, e.Err} }

// ping sends ctl.ping on a connection of its own and wants OK within
// cfg.Timeout; otherwise it returns a *PingError.
func ping(ctx context.Context, cfg Config) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	p := &probe{ctx: ctx, cfg: cfg}
	defer p.closeAll()
	w, err := p.dial()
	if err != nil {
		f := PingDialFailed
		if errors.Is(err, syscall.ECONNREFUSED) {
			f = PingRefused
		}
		return &PingError{Addr: cfg.Addr, Failure: f, Timeout: cfg.Timeout, Err: err}
	}
	if err := p.pingOn(w, 1); err != nil {
		head := bytes.Clone(w.head.head)
		return &PingError{Addr: cfg.Addr, Failure: pingFailure(err, head), Head: head, Timeout: cfg.Timeout, Err: err}
	}
	return nil
}

// pingFailure decides what a ping on an open connection that ended with
// err saw, head being the bytes the server sent.
func pingFailure(err error, head []byte) PingFailure {
	var pe *proto.ProtocolError
	switch {
	case bytes.HasPrefix(head, []byte("HTTP")):
		// As a frame length, "HTTP" is far past the limit: these bytes
		// cannot have started a frame.
		return PingHTTP
	case errors.As(err, &pe) && len(head) > 0:
		return PingNotFrame
	case isTimeout(err):
		return PingSilent
	case errors.Is(err, io.EOF) || isReset(err):
		return PingClosed
	}
	return PingBadAnswer
}

// showLen is how many bytes showBytes shows.
const showLen = 16

// showBytes shows the start of b in hex and quoted: 53 53 48 2d ("SSH-").
func showBytes(b []byte) string {
	more := ""
	if len(b) > showLen {
		b, more = b[:showLen], "..."
	}
	return fmt.Sprintf("% x (%q%s)", b, b, more)
}

// firstLine is b up to its first line end, as an HTTP status line ends.
func firstLine(b []byte) string {
	s := string(b)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	return s
}
