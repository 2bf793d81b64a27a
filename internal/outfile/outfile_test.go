package outfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.json")
	if err := os.WriteFile(file, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		want       error
		text       string
	}{
		{"new file", filepath.Join(dir, "new.json"), nil, ""},
		{"existing file", file, nil, ""},
		{"directory", dir, ErrIsDir, dir + ": is a directory"},
		{"root", "/", ErrIsDir, "/: is a directory"},
		{"missing directory", filepath.Join(dir, "no", "f.json"), ErrNoDir, filepath.Join(dir, "no", "f.json") + ": directory " + filepath.Join(dir, "no") + " does not exist"},
		{"file as directory", filepath.Join(file, "x"), ErrNoDir, "directory " + file + " does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.path)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Check(%q) = %v, want %v", tt.path, err, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), tt.text) {
				t.Errorf("Check(%q) says %q, want it to contain %q", tt.path, err, tt.text)
			}
			if _, err := Create(tt.path); (err == nil) != (tt.want == nil) {
				t.Errorf("Create(%q): %v, want the same verdict as Check", tt.path, err)
			}
		})
	}
}

func TestCommitReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.xml")
	if err := os.WriteFile(path, []byte("previous"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("new"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "previous" {
		t.Fatalf("before Commit the path holds %q, want %q", got, "previous")
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Abort() // after Commit: a no-op
	if got, _ := os.ReadFile(path); string(got) != "new" {
		t.Errorf("after Commit the path holds %q, want %q", got, "new")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries after Commit, want 1", len(ents))
	}
}

func TestAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	f.Abort()
	f.Abort()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("directory holds %v after Abort, want nothing", ents)
	}
}

func TestSame(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if err := os.WriteFile(a, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "l")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		a, b string
		want bool
	}{
		{a, a, true},
		{a, filepath.Join(dir, ".", "a"), true},
		{a, link, true},
		{"x.json", "./x.json", true},
		{a, filepath.Join(dir, "b"), false},
	}
	for _, tt := range tests {
		if got := Same(tt.a, tt.b); got != tt.want {
			t.Errorf("Same(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
