package serverapi_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

func TestFields(t *testing.T) {
	fs, err := serverapi.ParseFields([]byte("  b=2 a=1\tc= a=3 "))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(serverapi.Fields{"a": "3", "b": "2", "c": ""}, fs); diff != "" {
		t.Errorf("ParseFields (-want +got):\n%s", diff)
	}
	if got, want := fs.String(), "a=3 b=2 c="; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	for _, bad := range []string{"a", "=1", "a=1 b"} {
		if _, err := serverapi.ParseFields([]byte(bad)); err == nil {
			t.Errorf("ParseFields(%q) accepted it, want an error", bad)
		}
	}
	n, err := fs.Int("missing", 7)
	if n != 7 || err != nil {
		t.Errorf("Int(missing, 7) = %d, %v; want 7, nil", n, err)
	}
	if n, err := (serverapi.Fields{"n": "-12"}).Int("n", 0); n != -12 || err != nil {
		t.Errorf("Int(n=-12) = %d, %v; want -12, nil", n, err)
	}
	if _, err := (serverapi.Fields{"n": fmt.Sprint(uint64(math.MaxInt64) + 1)}).Int("n", 0); err == nil {
		t.Errorf("Int of a value past int64 accepted it, want an error")
	}
}
