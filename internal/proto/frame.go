package proto

import (
	"encoding/binary"
	"fmt"
)

// Wire constants. See SPEC.md for the frame layout.
const (
	Magic   uint16 = 0x5243 // "RC"
	Version uint8  = 1

	// MinFrameLen and MaxFrameLen bound frameLen, the number of bytes that
	// follow the 4-byte length prefix.
	MinFrameLen = 24
	MaxFrameLen = 65536

	// MaxMethodLen and MaxKeyLen bound the method name and idempotency key.
	MaxMethodLen = 32
	MaxKeyLen    = 64

	lenPrefix = 4
	// fixedLen is every byte after the length prefix that is not method,
	// key or payload: magic 2, version 1, type 1, id 8, budget 4, status 1,
	// methodLen 1, keyLen 1, payloadLen 4.
	fixedLen = 23
	// headLen is the fixed part that precedes the method name.
	headLen = fixedLen - 4
)

// Frame is one decoded or to-be-encoded message.
type Frame struct {
	Type Type
	// ID identifies one attempt of a call; never zero, except in a
	// DRAIN frame that names no request.
	ID uint64
	// BudgetMs is, in a request, what is left of the attempt's budget in
	// milliseconds, relative to the moment the server receives the frame.
	// Zero in responses.
	BudgetMs uint32
	// Status is the outcome in a response; zero in requests.
	Status  Status
	Method  string
	Key     string
	Payload []byte
}

// EncodedLen returns the number of bytes f occupies on the wire, including
// the length prefix.
func (f *Frame) EncodedLen() int {
	return lenPrefix + fixedLen + len(f.Method) + len(f.Key) + len(f.Payload)
}

// AppendFrame appends the encoding of f to dst and returns the extended
// slice. It checks every rule a decoder checks, so a frame it accepts is one
// a peer accepts; on error dst is returned unchanged.
func AppendFrame(dst []byte, f *Frame) ([]byte, error) {
	dst, err := AppendFrameHead(dst, f)
	if err != nil {
		return dst, err
	}
	return append(dst, f.Payload...), nil
}

// AppendFrameHead appends the encoding of f up to its payload, leaving
// the payload's len(f.Payload) bytes out, and returns the extended slice:
// a writer that sends f.Payload right after it, from where it lies (with
// writev, say), has sent f without copying the payload. It checks what
// AppendFrame checks; on error dst is returned unchanged.
func AppendFrameHead(dst []byte, f *Frame) ([]byte, error) {
	if err := f.Check(); err != nil {
		return dst, err
	}
	n := fixedLen + len(f.Method) + len(f.Key) + len(f.Payload)
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = binary.BigEndian.AppendUint16(dst, Magic)
	dst = append(dst, Version, byte(f.Type))
	dst = binary.BigEndian.AppendUint64(dst, f.ID)
	dst = binary.BigEndian.AppendUint32(dst, f.BudgetMs)
	dst = append(dst, byte(f.Status), byte(len(f.Method)), byte(len(f.Key)))
	dst = append(dst, f.Method...)
	dst = append(dst, f.Key...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(f.Payload)))
	return dst, nil
}

// Check reports the first wire rule f breaks, as an error wrapping
// ErrInvalidFrame; nil means a peer would accept f.
func (f *Frame) Check() error {
	n := fixedLen + len(f.Method) + len(f.Key) + len(f.Payload)
	switch {
	case n > MaxFrameLen:
		return fmt.Errorf("%w: frame length %d outside [%d,%d]", ErrInvalidFrame, n, MinFrameLen, MaxFrameLen)
	case f.Type != TypeRequest && f.Type != TypeResponse && f.Type != TypeDrain:
		return fmt.Errorf("%w: type %v", ErrInvalidFrame, f.Type)
	case f.ID == 0 && f.Type != TypeDrain:
		return fmt.Errorf("%w: request id 0", ErrInvalidFrame)
	case len(f.Method) < 1 || len(f.Method) > MaxMethodLen:
		return fmt.Errorf("%w: method length %d outside [1,%d]", ErrInvalidFrame, len(f.Method), MaxMethodLen)
	case len(f.Key) > MaxKeyLen:
		return fmt.Errorf("%w: key length %d outside [0,%d]", ErrInvalidFrame, len(f.Key), MaxKeyLen)
	case !f.Status.onWire():
		return fmt.Errorf("%w: status %v does not travel", ErrInvalidFrame, f.Status)
	case f.Type != TypeResponse && f.Status != StatusOK:
		return fmt.Errorf("%w: %v with status %v", ErrInvalidFrame, f.Type, f.Status)
	}
	return nil
}
