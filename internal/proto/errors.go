package proto

import (
	"errors"
	"fmt"
)

// ErrInvalidFrame is wrapped by every error AppendFrame returns: the frame
// breaks a wire rule and nothing was encoded. Calls that fail this way end
// with StatusInvalidArgument.
var ErrInvalidFrame = errors.New("proto: invalid frame")

// ProtocolError is returned by a Decoder for bytes that are not a valid
// frame. After one, nothing more on that connection can be interpreted.
type ProtocolError struct {
	Reason string
}

func (e *ProtocolError) Error() string { return "proto: " + e.Reason }

func protocolErrorf(format string, args ...any) error {
	return &ProtocolError{Reason: fmt.Sprintf(format, args...)}
}
