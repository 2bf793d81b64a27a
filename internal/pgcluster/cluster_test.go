//go:build unix

package pgcluster

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// startOrSkip starts a cluster, skipping the test when PostgreSQL is not
// installed, unless it is required.
func startOrSkip(t *testing.T) *Cluster {
	t.Helper()
	begin := time.Now()
	c, err := Start(t.Context())
	if errors.Is(err, ErrNotFound) && !Required() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Start took %v", time.Since(begin).Round(time.Millisecond))
	t.Cleanup(func() { c.Stop() })
	return c
}

// newDatabase creates a database that is dropped when t ends, so that
// none accumulate on an external server.
func newDatabase(t *testing.T, c *Cluster, prefix string) string {
	t.Helper()
	dsn, err := c.NewDatabase(t.Context(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.DropDatabase(context.Background(), dsn); err != nil {
			t.Error(err)
		}
	})
	return dsn
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func queryInt(t *testing.T, conn *pgx.Conn, sql string) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(t.Context(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestCluster runs the one real server of this package's tests through its
// life: databases are separate, NewDatabase is safe to call concurrently,
// the DSNs work with pgx and database/sql, DropDatabase drops only its own,
// and Stop leaves neither process nor directory behind.
func TestCluster(t *testing.T) {
	c := startOrSkip(t)
	ctx := t.Context()

	t.Run("databases_are_separate", func(t *testing.T) {
		dsn1, dsn2 := newDatabase(t, c, "sep"), newDatabase(t, c, "sep")
		if dsn1 == dsn2 {
			t.Fatalf("two databases share the DSN %s", dsn1)
		}
		conn1, conn2 := connect(t, dsn1), connect(t, dsn2)
		for _, conn := range []*pgx.Conn{conn1, conn2} {
			if _, err := conn.Exec(ctx, "CREATE TABLE t (v int)"); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := conn1.Exec(ctx, "INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		if got := queryInt(t, conn1, "SELECT count(*) FROM t"); got != 1 {
			t.Errorf("rows in the written database: got %d, want 1", got)
		}
		if got := queryInt(t, conn2, "SELECT count(*) FROM t"); got != 0 {
			t.Errorf("rows in the other database: got %d, want 0", got)
		}
	})

	t.Run("concurrent_new_database", func(t *testing.T) {
		const n = 6
		dsns := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { dsns[i], errs[i] = c.NewDatabase(ctx, t.Name()) })
		}
		wg.Wait()
		seen := map[string]bool{}
		for i := range n {
			if errs[i] != nil {
				t.Error(errs[i])
				continue
			}
			t.Cleanup(func() { c.DropDatabase(context.Background(), dsns[i]) })
			if seen[dsns[i]] {
				t.Errorf("DSN %s handed out twice", dsns[i])
			}
			seen[dsns[i]] = true
		}
	})

	t.Run("dsn_forms", func(t *testing.T) {
		dsn := newDatabase(t, c, "forms")
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if c.dir != "" && (!strings.HasPrefix(dsn, "postgres://postgres@/") || cfg.Host != c.dir) {
			t.Errorf("DSN %s: want postgres://postgres@/DB?host=%s...", dsn, c.dir)
		}
		if got := queryString(t, connect(t, dsn), "SELECT current_database()"); got != cfg.Database {
			t.Errorf("pgx: current_database() = %q, want %q", got, cfg.Database)
		}
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var got string
		if err := db.QueryRowContext(ctx, "SELECT current_database()").Scan(&got); err != nil {
			t.Fatalf("database/sql: %v", err)
		}
		if got != cfg.Database {
			t.Errorf("database/sql: current_database() = %q, want %q", got, cfg.Database)
		}
	})

	t.Run("drop_database", func(t *testing.T) {
		dsn, err := c.NewDatabase(ctx, "drop")
		if err != nil {
			t.Fatal(err)
		}
		held := connect(t, dsn) // FORCE must end this session
		if err := c.DropDatabase(ctx, dsn); err != nil {
			t.Fatal(err)
		}
		if err := held.Ping(ctx); err == nil {
			t.Error("a session on the dropped database still answers")
		}
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			conn.Close(ctx)
			t.Errorf("connected to %s after DropDatabase", dsn)
		}
		if err := c.DropDatabase(ctx, dsn); err == nil {
			t.Error("DropDatabase dropped the same database twice")
		}
		if err := c.DropDatabase(ctx, c.admin); err == nil || !strings.Contains(err.Error(), "not created by this cluster") {
			t.Errorf("DropDatabase(maintenance database) = %v, want a refusal", err)
		}
	})

	t.Run("killed_owner_leftovers", func(t *testing.T) { testLeftovers(t, c) })

	// The server's processes, to check that none outlives Stop: the
	// postmaster, and the backends and background workers, one of them
	// serving a session left open across Stop.
	var pids []int
	if c.postmaster != nil {
		pids = append(pids, c.postmaster.PID)
		rows, err := connect(t, c.admin).Query(ctx, "SELECT pid FROM pg_stat_activity")
		if err != nil {
			t.Fatal(err)
		}
		backends, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, backends...)
	}
	dir := c.dir
	begin := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("Stop took %v", time.Since(begin).Round(time.Millisecond))
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := c.NewDatabase(ctx, "late"); !errors.Is(err, ErrStopped) {
		t.Errorf("NewDatabase after Stop: got %v, want ErrStopped", err)
	}
	if dir == "" {
		return // an external server, which Stop leaves alone
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Stop, stat %s: got %v, want not exist", dir, err)
	}
	if len(pids) < 3 {
		t.Errorf("server processes before Stop: %v, want the postmaster, a session and background workers", pids)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("after Stop, signal 0 to server process %d: got %v, want ESRCH", pid, err)
		}
	}
	log := c.Log()
	for _, want := range []string{"received fast shutdown request", "database system is shut down"} {
		if !strings.Contains(log, want) {
			t.Errorf("log after Stop lacks %q:\n%s", want, log)
		}
	}
}

func queryString(t *testing.T, conn *pgx.Conn, sql string) string {
	t.Helper()
	var s string
	if err := conn.QueryRow(t.Context(), sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

// sharedDir returns a new directory that the user the server programs run
// as can reach and, with writable, write in: t.TempDir's parent is private
// to root.
func sharedDir(t *testing.T, writable bool) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgcluster-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	mode := os.FileMode(0o755)
	if writable {
		mode = 0o777
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestStartFailures starts stand-ins for initdb and postgres that fail,
// and checks that Start says why, promptly, and leaves nothing behind.
func TestStartFailures(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	const ok = "exit 0"
	tests := []struct {
		name     string
		initdb   string
		postgres string
		timeout  time.Duration // of Start's context; zero for none
		want     string        // in the error
		wantErr  error         // wrapped by the error, if not nil
	}{
		{"initdb_fails", `echo "initdb: fake initdb failure" >&2; exit 1`, ok, 0, "fake initdb failure", nil},
		{"postgres_exits", ok, `echo "FATAL:  fake postgres failure" >&2; exit 1`, 0, "fake postgres failure", nil},
		{"postgres_never_ready", ok, `echo $$ >"$PIDFILE"; exec sleep 60`, 500 * time.Millisecond, "waiting for postgres", context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin, tmp, pids := sharedDir(t, false), sharedDir(t, true), sharedDir(t, true)
			pidFile := filepath.Join(pids, "pid")
			for name, body := range map[string]string{"initdb": tt.initdb, "postgres": tt.postgres} {
				script := "#!/bin/sh\n" + body + "\n"
				if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv(EnvDSN, "")
			t.Setenv(EnvBin, bin)
			t.Setenv("TMPDIR", tmp)
			t.Setenv("PIDFILE", pidFile)
			ctx := t.Context()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}

			begin := time.Now()
			c, err := Start(ctx)
			if err == nil {
				c.Stop()
				t.Fatal("Start succeeded")
			}
			t.Logf("Start: %v", err)
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %q does not wrap %v", err, tt.wantErr)
			}
			if d := time.Since(begin); d > StartTimeout/3 {
				t.Errorf("Start took %v to fail, want well under StartTimeout (%v)", d, StartTimeout)
			}
			assertEmpty(t, tmp)
			if b, err := os.ReadFile(pidFile); err == nil {
				pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
				if err != nil {
					t.Fatal(err)
				}
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("signal 0 to the stand-in postgres %d: got %v, want ESRCH", pid, err)
				}
			}
		})
	}
}
