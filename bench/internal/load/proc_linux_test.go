package load

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name string
		stat string
		want time.Duration
		ok   bool
	}{
		{
			name: "plain",
			stat: "4242 (rpcserver) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 25 0 0 20 0 7 0 1000 0 0",
			want: 1750 * time.Millisecond, ok: true,
		},
		{
			name: "name with spaces and parentheses",
			stat: "7 (a) b (c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 5 0 0",
			want: 70 * time.Millisecond, ok: true,
		},
		{name: "no name", stat: "7 a R 1", ok: false},
		{name: "truncated", stat: "7 (a) R 1 7 7 0", ok: false},
		{name: "not a number", stat: "7 (a) R 1 7 7 0 -1 0 0 0 0 0 x 4 0", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tt.stat))
			if (err == nil) != tt.ok {
				t.Fatalf("error: got %v, want ok=%v", err, tt.ok)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestProcCPUOfSelf(t *testing.T) {
	if _, err := procCPU(os.Getpid()); err != nil {
		t.Fatalf("procCPU(self): %v", err)
	}
	if _, err := selfCPU(); err != nil {
		t.Fatalf("selfCPU: %v", err)
	}
}
