//go:build unix

package outfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestModeHonoursUmask: a file a CI uploader running as another user
// reads must be as readable as one the shell's > makes.
func TestModeHonoursUmask(t *testing.T) {
	for _, mask := range []int{0o022, 0o077} {
		old := syscall.Umask(mask)
		path := filepath.Join(t.TempDir(), "out.json")
		f, err := Create(path)
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fi.Mode().Perm(), os.FileMode(0o666&^mask); got != want {
			t.Errorf("umask %03o: mode %v, want %v", mask, got, want)
		}
	}
}
