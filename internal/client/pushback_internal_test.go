package client

import (
	"testing"
	"time"
)

func TestPushback(t *testing.T) {
	tests := []struct {
		payload string
		want    time.Duration
	}{
		{"", 0},
		{"injected unavailable", 0},
		{"queue full", 0},
		{"injected unavailable retry_after_ms=200", 200 * time.Millisecond},
		{"retry_after_ms=1", time.Millisecond},
		{"retry_after_ms=250 queue full", 250 * time.Millisecond},
		{"retry_after_ms=0", 0},
		{"a retry_after_ms=-1", RetryNever},
		{"a retry_after_ms=-300", RetryNever},
		{"a retry_after_ms=", RetryNever},
		{"a retry_after_ms=-", RetryNever},
		{"a retry_after_ms=+5", RetryNever},
		{"a retry_after_ms=20ms", RetryNever},
		{"a retry_after_ms=1.5", RetryNever},
		{"a retry_after_ms=99999999999999999999999", time.Duration(maxPushbackMs) * time.Millisecond},
		{"x_retry_after_ms=200", 0},
		{"x_retry_after_ms=200 retry_after_ms=30", 30 * time.Millisecond},
		{"retry_after_ms=30 retry_after_ms=never", 30 * time.Millisecond},
		{"retry_after_ms", 0},
	}
	for _, tt := range tests {
		t.Run(tt.payload, func(t *testing.T) {
			if got := pushback([]byte(tt.payload)); got != tt.want {
				t.Errorf("pushback(%q) = %v, want %v", tt.payload, got, tt.want)
			}
		})
	}
}

func TestPushbackAllocs(t *testing.T) {
	p := []byte("injected unavailable retry_after_ms=200")
	if n := testing.AllocsPerRun(100, func() { pushback(p) }); n != 0 {
		t.Errorf("pushback allocated %v times per run, want 0", n)
	}
}
