package main

import (
	"bytes"
	"testing"
)

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no kind", nil, 2},
		{"unknown kind", []string{"-kind", "thrift"}, 2},
		{"extra argument", []string{"-kind", "raw", "now"}, 2},
		{"bad address", []string{"-kind", "raw", "-addr", "127.0.0.1:notaport"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := run(tt.args, &stdout, &stderr); got != tt.want {
				t.Errorf("exit: got %d, want %d; stderr:\n%s", got, tt.want, stderr.String())
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout: got %q, want nothing", stdout.String())
			}
		})
	}
}
