package client

import (
	"bytes"
	"time"
)

// RetryNever is Attempt.RetryAfter for a hint that says "do not retry":
// retry_after_ms=-1, any other negative N, or a malformed value.
const RetryNever time.Duration = -1

// pushbackToken introduces the retry-after hint in an UNAVAILABLE answer's
// payload (SPEC "Statuses").
var pushbackToken = []byte("retry_after_ms=")

// maxPushbackMs caps a hint so that converting it to a Duration cannot
// overflow; a longer hint is past any deadline anyway.
const maxPushbackMs = int64(1) << 40

// pushback returns the retry-after hint in an UNAVAILABLE answer's payload:
// 0 when there is none, RetryNever when it is negative or malformed,
// otherwise the wait it asks for. It does not allocate. The token counts
// only as a whole space-separated word; the first such word decides.
func pushback(payload []byte) time.Duration {
	for rest := payload; ; {
		i := bytes.Index(rest, pushbackToken)
		if i < 0 {
			return 0
		}
		at := len(payload) - len(rest) + i
		rest = rest[i+len(pushbackToken):]
		if at > 0 && payload[at-1] != ' ' {
			continue // part of a longer word, such as x_retry_after_ms=
		}
		if j := bytes.IndexByte(rest, ' '); j >= 0 {
			rest = rest[:j]
		}
		return parseMs(rest)
	}
}

// parseMs parses the N of retry_after_ms=N, a decimal integer. A negative or malformed N is RetryNever.
func parseMs(v []byte) time.Duration {
	if len(v) > 0 && v[0] == '-' {
		return RetryNever
	}
	if len(v) == 0 {
		return RetryNever
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return RetryNever
		}
		n = min(n*10+int64(c-'0'), maxPushbackMs)
	}
	return time.Duration(n) * time.Millisecond
}
