package pgcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rpcbench/rpcbench/internal/leftover"
)

// helperEnv makes this test binary the owner testLeftovers kills: see
// ownerHelper.
const helperEnv = "PGCLUSTER_TEST_OWNER"

// ownerHelper makes what a scenario makes, the way it does, and holds it
// until its stdin ends: a database on the server RPCBENCH_PG_DSN names and
// a temporary directory in TMPDIR. It prints "DIR DSN" once both exist.
// Killed, it leaves both behind.
func ownerHelper() int {
	ctx := context.Background()
	c, err := Start(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dsn, err := c.NewDatabase(ctx, "owner")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := leftover.MkdirTemp("", "owner")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(dir, dsn)
	io.Copy(io.Discard, os.Stdin)
	os.RemoveAll(dir)
	if err := c.DropDatabase(ctx, dsn); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// owner is a running ownerHelper and what it made.
type owner struct {
	cmd   *exec.Cmd
	stdin io.Closer
	dir   string
	db    string
}

// startOwner starts an ownerHelper on the server dsn names, with its
// temporary directories in tmp, and returns once it has made its things.
func startOwner(t *testing.T, dsn, tmp string) *owner {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), self)
	cmd.Env = append(os.Environ(), helperEnv+"=1", EnvDSN+"="+dsn, "TMPDIR="+tmp)
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 10 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o := &owner{cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		stdin.Close()
		o.cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	dir, odsn, ok := strings.Cut(strings.TrimSpace(line), " ")
	if err != nil || !ok {
		t.Fatalf("owner helper: read %q, %v", line, err)
	}
	cfg, err := pgx.ParseConfig(odsn)
	if err != nil {
		t.Fatal(err)
	}
	o.dir, o.db = dir, cfg.Database
	return o
}

// testLeftovers kills an owner of a database on c and a temporary
// directory outright, and checks that the next Start on c's server drops
// its database and leftover.Sweep removes its directory, while another
// owner's, alive, stay. The killed owner's pid is unused after it dies,
// or is another process's: both are gone owners.
func testLeftovers(t *testing.T, c *Cluster) {
	ctx := t.Context()
	base := c.admin
	tmp := t.TempDir()
	killed, live := startOwner(t, base, tmp), startOwner(t, base, tmp)
	if err := killed.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.cmd.Wait() // reaped: not even a zombie holds its pid
	for _, o := range []*owner{killed, live} {
		if _, err := os.Stat(o.dir); err != nil {
			t.Fatalf("before the sweep: %v", err)
		}
	}

	// The next start: a run on the same server and TMPDIR.
	t.Setenv(EnvDSN, base)
	next, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Stop()
	dropped, err := next.Swept()
	if err != nil {
		t.Errorf("Swept: %v", err)
	}
	removed, err := leftover.Sweep(tmp)
	if err != nil {
		t.Errorf("Sweep: %v", err)
	}
	if !slices.Contains(dropped, killed.db) || slices.Contains(dropped, live.db) {
		t.Errorf("Start dropped %v; want %s, the killed owner's, and not %s, the live one's", dropped, killed.db, live.db)
	}
	if !slices.Equal(removed, []string{killed.dir}) {
		t.Errorf("Sweep removed %v; want [%s], the killed owner's", removed, killed.dir)
	}
	have := databases(t, base)
	for _, o := range []struct {
		what string
		o    *owner
		want bool
	}{{"killed", killed, false}, {"live", live, true}} {
		if got := have[o.o.db]; got != o.want {
			t.Errorf("the %s owner's database %s exists: got %v, want %v", o.what, o.o.db, got, o.want)
		}
		_, err := os.Stat(o.o.dir)
		if got := err == nil; got != o.want || (err != nil && !errors.Is(err, fs.ErrNotExist)) {
			t.Errorf("the %s owner's directory %s: stat got %v, want it to exist: %v", o.what, o.o.dir, err, o.want)
		}
	}

	// The live owner still cleans up after itself.
	live.stdin.Close()
	if err := live.cmd.Wait(); err != nil {
		t.Errorf("live owner: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
}

// databases returns the names of the databases on the server dsn names.
func databases(t *testing.T, dsn string) map[string]bool {
	t.Helper()
	rows, err := connect(t, dsn).Query(t.Context(), "SELECT datname FROM pg_database")
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	return have
}
