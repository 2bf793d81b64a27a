package pgtest_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rpcbench/rpcbench/internal/pgcluster"
	"github.com/rpcbench/rpcbench/internal/pgcluster/pgtest"
)

// recorder is a testing.TB whose Skip and Fatal are recorded rather than
// acted on by the test framework.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}

func (r *recorder) Skip(args ...any) {
	r.skipped, r.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) {
	r.failed, r.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}

// record runs f on its own goroutine, as Skip and Fatal end it.
func record(t *testing.T, f func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func TestStartWithoutPostgres(t *testing.T) {
	tests := []struct {
		require  string
		wantSkip bool
	}{
		{"", true},
		{"0", true},
		{"1", false},
	}
	for _, tt := range tests {
		t.Run("require="+tt.require, func(t *testing.T) {
			t.Setenv(pgcluster.EnvDSN, "")
			t.Setenv(pgcluster.EnvBin, t.TempDir())
			t.Setenv(pgcluster.EnvRequire, tt.require)
			r := record(t, func(tb testing.TB) { pgtest.Start(tb) })
			if r.skipped != tt.wantSkip || r.failed == tt.wantSkip {
				t.Errorf("got skipped=%v failed=%v, want skipped=%v failed=%v", r.skipped, r.failed, tt.wantSkip, !tt.wantSkip)
			}
			if !strings.Contains(r.msg, "apt-get install postgresql") {
				t.Errorf("message %q does not say how to install PostgreSQL", r.msg)
			}
		})
	}
}

func TestShared(t *testing.T) {
	c := pgtest.Shared(t)
	if again := pgtest.Shared(t); again != c {
		t.Fatalf("second Shared returned %p, want the first's %p", again, c)
	}
	var dsn string
	t.Run("new_database", func(t *testing.T) {
		dsn = pgtest.NewDatabase(t, c)
		conn, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var name string
		if err := conn.QueryRow(t.Context(), "SELECT current_database()").Scan(&name); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(name, "_testshared_new_database") {
			t.Errorf("current_database() = %q, want it named after the test", name)
		}
	})
	// The subtest's cleanup has dropped its database.
	if conn, err := pgx.Connect(t.Context(), dsn); err == nil {
		conn.Close(context.Background())
		t.Errorf("connected to %s after its test ended", dsn)
	}
}
