package main

import (
	"bytes"
	"context"
	"slices"
	"testing"
)

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"help", []string{"-h"}, exitOK},
		{"unknown flag", []string{"-frobnicate"}, exitUsage},
		{"bad g", []string{"-g", "8,many"}, exitUsage},
		{"zero g", []string{"-g", "0"}, exitUsage},
		{"unknown system", []string{"-systems", "rpcbench,soap"}, exitUsage},
		{"zero n", []string{"-n", "0"}, exitUsage},
		{"extra argument", []string{"now"}, exitUsage},
		{"bad memory counts", []string{"-systems", "conns-memory", "-memory-conns", "1000,ten"}, exitUsage},
		{"memory counts not increasing", []string{"-systems", "conns-memory", "-memory-conns", "1000,100"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := run(context.Background(), tt.args, &stdout, &stderr); got != tt.want {
				t.Errorf("exit: got %d, want %d; stderr:\n%s", got, tt.want, stderr.String())
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout: got %q, want nothing", stdout.String())
			}
		})
	}
}

func TestParseLists(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parse([]string{"-systems", " raw, rpcbench ,conns-memory", "-g", "1,16", "-profile", "grpc", "-memory-conns", "10, 100"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"raw", "rpcbench", "conns-memory"}; !slices.Equal(o.load.Systems, want) {
		t.Errorf("systems: got %q, want %q", o.load.Systems, want)
	}
	if want := []int{1, 16}; !slices.Equal(o.load.G, want) {
		t.Errorf("g: got %v, want %v", o.load.G, want)
	}
	if want := []int{10, 100}; !slices.Equal(o.load.MemoryConns, want) {
		t.Errorf("memory-conns: got %v, want %v", o.load.MemoryConns, want)
	}
	if want := []string{"grpc"}; !slices.Equal(o.load.ProfileSystems, want) {
		t.Errorf("profile: got %q, want %q", o.load.ProfileSystems, want)
	}
}
