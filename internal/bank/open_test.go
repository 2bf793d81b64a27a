package bank_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/internal/bank"
)

// TestOpenErrors: a store that cannot be opened says once which store it
// is, what failed and, where SQLite's own words do not, how to fix it.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	notDB := filepath.Join(dir, "not.db")
	if err := os.WriteFile(notDB, []byte("hello, not a database\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		spec string
		want string
		// prefix: want is only the start of the error, the rest being
		// another library's words.
		prefix  bool
		specErr bool // the error wraps bank.ErrStoreSpec
	}{
		{name: "missing directory", spec: "sqlite:" + dir + "/missing/x.db",
			want: "bank: sqlite " + dir + "/missing/x.db: unable to open database file (14); the directory " + dir + "/missing does not exist, create it first"},
		{name: "a directory", spec: "sqlite:" + dir,
			want: "bank: sqlite " + dir + ": unable to open database file (14); " + dir + " is a directory, name a file in it"},
		{name: "not a database", spec: "sqlite:" + notDB,
			want: "bank: sqlite " + notDB + ": file is not a database (26)"},
		{name: "unknown kind", spec: "mysql://x", specErr: true,
			want: `bank: bad store "mysql://x": want memory | sqlite:PATH | postgres://USER@HOST/DB?...`},
		{name: "postgres without a server", spec: "postgres:host=" + dir + "/no-socket user=x dbname=y", prefix: true,
			want: "bank: postgres: failed to connect to `user=x database=y`: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := bank.Open(tt.spec, bank.SQLOptions{})
			if err == nil {
				st.Close()
				t.Fatalf("Open(%q): got no error, want %s", tt.spec, tt.want)
			}
			got := err.Error()
			if tt.prefix && !strings.HasPrefix(got, tt.want) || !tt.prefix && got != tt.want {
				t.Errorf("Open(%q):\ngot  %s\nwant %s", tt.spec, got, tt.want)
			}
			if n := strings.Count(got, "bank:"); n != 1 {
				t.Errorf("Open(%q): got %q, saying bank: %d times, want once", tt.spec, got, n)
			}
			if errors.Is(err, bank.ErrStoreSpec) != tt.specErr {
				t.Errorf("Open(%q): errors.Is(err, ErrStoreSpec) got %v, want %v", tt.spec, !tt.specErr, tt.specErr)
			}
		})
	}
}
