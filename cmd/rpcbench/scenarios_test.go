package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveServer(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "rpcserver")
	plain := filepath.Join(dir, "not-executable")
	for path, mode := range map[string]os.FileMode{exe: 0o755, plain: 0o644} {
		if err := os.WriteFile(path, nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	nextTo := func(d string) func() (string, error) {
		return func() (string, error) { return filepath.Join(d, "rpcbench"), nil }
	}
	tests := []struct {
		name       string
		flag       string
		executable func() (string, error)
		want       string
		wantErr    string
	}{
		{"next to rpcbench", "", nextTo(dir), exe, ""},
		{"flag", exe, nextTo(t.TempDir()), exe, ""},
		{"missing next to rpcbench", "", nextTo(filepath.Join(dir, "sub")), "", "rpcserver not found at " + filepath.Join(dir, "sub", "rpcserver")},
		{"flag missing", filepath.Join(dir, "nope"), nextTo(dir), "", "not found"},
		{"not executable", plain, nextTo(dir), "", "not an executable file"},
		{"a directory", dir, nextTo(dir), "", "not an executable file"},
		{"executable unknown", "", func() (string, error) { return "", errors.New("no /proc") }, "", "no /proc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveServer(tt.flag, tt.executable)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "go build -o bin/ ./cmd/...") {
					t.Errorf("error %v, want one containing %q and the build command", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestResolveServerRelativeFlag(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("srv", nil, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := resolveServer("srv", nil)
	if want := filepath.Join(dir, "srv"); err != nil || got != want {
		t.Errorf("got %q, %v; want %q (absolute, so exec does not search $PATH)", got, err, want)
	}
}
