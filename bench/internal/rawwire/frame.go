// Package rawwire is the benchmark's floor: a length-prefixed echo over one
// TCP connection, with as little work per call as a multiplexed client can
// do. The client coalesces every queued request into one write; the server
// writes back, in one write, every complete frame a read brought in,
// without looking inside them.
//
// A frame is an 8-byte header, then the payload:
//
//	length uint32 big-endian, the payload's length, at most MaxPayload
//	id     uint32 big-endian, chosen by the client, echoed by the server
package rawwire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

const (
	// HeaderLen is the size of a frame header.
	HeaderLen = 8
	// MaxPayload bounds a frame's payload, so that one frame always fits
	// in a connection's read buffer.
	MaxPayload = bufSize - HeaderLen

	bufSize = 64 << 10
)

// ErrFrameTooLong is wrapped by the errors for a header whose length is
// over MaxPayload.
var ErrFrameTooLong = errors.New("rawwire: frame too long")

// AppendFrame appends a frame carrying id and payload to dst. It panics if
// payload is longer than MaxPayload: callers check first.
func AppendFrame(dst []byte, id uint32, payload []byte) []byte {
	if len(payload) > MaxPayload {
		panic(fmt.Sprintf("rawwire: payload of %d bytes over MaxPayload %d", len(payload), MaxPayload))
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.BigEndian.AppendUint32(dst, id)
	return append(dst, payload...)
}

// NextFrame splits the first frame off b. ok is false when b does not yet
// hold a whole frame. The payload aliases b. The length is checked as soon
// as a header is there, before waiting for the payload.
func NextFrame(b []byte) (id uint32, payload, rest []byte, ok bool, err error) {
	if len(b) < HeaderLen {
		return 0, nil, b, false, nil
	}
	n := binary.BigEndian.Uint32(b)
	if n > MaxPayload {
		return 0, nil, b, false, fmt.Errorf("%w: length %d over %d", ErrFrameTooLong, n, MaxPayload)
	}
	end := HeaderLen + int(n)
	if len(b) < end {
		return 0, nil, b, false, nil
	}
	return binary.BigEndian.Uint32(b[4:]), b[HeaderLen:end:end], b[end:], true, nil
}

// completeLen returns how many leading bytes of b are whole frames.
func completeLen(b []byte) (int, error) {
	total := 0
	for {
		_, _, rest, ok, err := NextFrame(b[total:])
		if err != nil {
			return total, err
		}
		if !ok {
			return total, nil
		}
		total = len(b) - len(rest)
	}
}
