package transport

import "fmt"

// FieldError is what a transport's Config.Validate returns for a field
// out of range. It wraps Config, the transport's ErrConfig, so that a
// caller can tell a bad configuration with errors.Is and name the field
// (a flag, say) with errors.As.
type FieldError struct {
	// Config is the transport's ErrConfig.
	Config error
	// Field is the Config field's name.
	Field string
	// Value is its value, and Rule what it must satisfy.
	Value any
	Rule  string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%v: %s %v %s", e.Config, e.Field, e.Value, e.Rule)
}

func (e *FieldError) Unwrap() error { return e.Config }
