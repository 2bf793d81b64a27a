package grpcwire

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// ParseTimeout decodes a grpc-timeout header value (PROTOCOL-HTTP2.md:
// TimeoutValue TimeoutUnit, at most 8 ASCII digits and one of H M S m u
// n), as grpc-go's decodeTimeout accepts it. A value too large for a
// time.Duration is clamped to the largest one.
func ParseTimeout(s string) (time.Duration, error) {
	if len(s) < 2 || len(s) > 9 {
		return 0, fmt.Errorf("grpcwire: grpc-timeout %q: want 1 to 8 digits and a unit", s)
	}
	var unit time.Duration
	switch s[len(s)-1] {
	case 'H':
		unit = time.Hour
	case 'M':
		unit = time.Minute
	case 'S':
		unit = time.Second
	case 'm':
		unit = time.Millisecond
	case 'u':
		unit = time.Microsecond
	case 'n':
		unit = time.Nanosecond
	default:
		return 0, fmt.Errorf("grpcwire: grpc-timeout %q: unknown unit %q", s, s[len(s)-1:])
	}
	digits := s[:len(s)-1]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, fmt.Errorf("grpcwire: grpc-timeout %q: %q is not a digit", s, digits[i:i+1])
		}
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("grpcwire: grpc-timeout %q: %w", s, err)
	}
	if n > uint64(math.MaxInt64/int64(unit)) {
		return math.MaxInt64, nil
	}
	return time.Duration(n) * unit, nil
}
