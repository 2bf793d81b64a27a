package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rpcbench/rpcbench/internal/leftover"
	"github.com/rpcbench/rpcbench/internal/proc"
)

const (
	// StartTimeout bounds how long a server Start started may take to
	// accept connections, and how long Start waits for an external one.
	StartTimeout = 30 * time.Second
	// StopTimeout is how long a server has to finish a fast shutdown
	// before it is asked for an immediate one.
	StopTimeout = 10 * time.Second

	// quitTimeout is how long a server has to finish an immediate
	// shutdown before it is killed. PostgreSQL itself gives its backends
	// 5s to heed SIGQUIT before it sends them SIGKILL.
	quitTimeout = 10 * time.Second

	// pollInterval is how often Start tries to connect while the server
	// starts; PostgreSQL has no readiness event a client can wait on.
	pollInterval = 20 * time.Millisecond
	// pollTimeout bounds one connection attempt to a starting server.
	pollTimeout = 2 * time.Second

	// superuser is the role initdb creates and every DSN connects as.
	superuser = "postgres"
	// port only names the socket file: no TCP port is bound, and each
	// server has a directory of its own, so every server can use it.
	port = 5432
	// maxSocketPath is the room in a Unix socket address (sun_path) on
	// Linux, less its terminating NUL.
	maxSocketPath = 107
	// logTailBytes is how much of the server's log Log returns at most.
	logTailBytes = 8 << 10
)

// ErrStopped is returned by NewDatabase and DropDatabase after Stop.
var ErrStopped = errors.New("pgcluster: cluster stopped")

// Cluster is a running PostgreSQL server: one Start started, or the
// external one RPCBENCH_PG_DSN names. Its methods may be called
// concurrently.
type Cluster struct {
	// admin is the DSN databases are created and dropped through: the
	// superuser on the maintenance database for a server Start started,
	// RPCBENCH_PG_DSN as given for an external one.
	admin string
	// swept are the databases of gone owners Start dropped; sweepErr
	// says which it failed to.
	swept    []string
	sweepErr error

	// The fields below are zero for an external server.
	dir        string // the temporary directory: data/, postgres.log, the socket
	logPath    string
	postmaster *proc.Proc

	stopOnce sync.Once
	stopErr  error

	mu      sync.Mutex      // guards dbs, stopped, removed, logTail
	dbs     map[string]bool // databases created here and not dropped
	stopped bool
	removed bool   // dir is removed or being removed; logTail holds the log's end
	logTail string // the log's end, read just before dir was removed
}

// Start returns a running server. When RPCBENCH_PG_DSN is set it is that
// server, once it accepts a connection and Start has dropped the
// databases there whose owner is gone (see Swept). Otherwise Start runs initdb in a new
// temporary directory, starts postgres listening only on a Unix socket in
// that directory, and returns once the server accepts connections, which
// it must do within StartTimeout. ctx bounds Start only: the server runs
// until Stop, or until this process dies.
//
// A failed Start leaves no process or directory behind. Its error wraps
// ErrNotFound when there are no server binaries, and otherwise includes the
// end of the server's log when there is one.
func Start(ctx context.Context) (*Cluster, error) {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		return external(ctx, dsn)
	}
	return start(ctx, defaultFinder())
}

func external(ctx context.Context, dsn string) (*Cluster, error) {
	if err := ping(ctx, dsn, StartTimeout); err != nil {
		return nil, fmt.Errorf("pgcluster: %s: %w", EnvDSN, err)
	}
	c := &Cluster{admin: dsn, dbs: map[string]bool{}}
	c.swept, c.sweepErr = c.sweep(ctx)
	return c, nil
}

func start(ctx context.Context, f finder) (_ *Cluster, err error) {
	b, err := f.find()
	if err != nil {
		return nil, err
	}
	dir, err := leftover.MkdirTemp("", "pg")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	c := &Cluster{
		admin:   socketDSN(dir, "postgres"),
		dir:     dir,
		logPath: filepath.Join(dir, "postgres.log"),
		dbs:     map[string]bool{},
	}
	defer func() {
		if err != nil {
			c.stopOnce.Do(func() { c.stopErr = c.stop(false) })
			err = errors.Join(err, c.stopErr)
		}
	}()
	if sock := filepath.Join(dir, ".s.PGSQL."+strconv.Itoa(port)); len(sock) > maxSocketPath {
		return nil, fmt.Errorf("pgcluster: socket path %s is longer than %d bytes; set TMPDIR to a shorter directory", sock, maxSocketPath)
	}
	runAs := serverUser()
	if runAs != nil {
		// dir is still empty, so this is the recursive chown: everything
		// below it is made by initdb and postgres running as runAs.
		if err := os.Lchown(dir, int(runAs.UID), int(runAs.GID)); err != nil {
			return nil, fmt.Errorf("pgcluster: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	if err := initdb(ctx, b.initdb, data, runAs); err != nil {
		return nil, err
	}
	if err := c.launch(b.postgres, data, runAs); err != nil {
		return nil, err
	}
	if err := c.await(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Swept returns the databases Start dropped, on an external server,
// because the process that made them is gone: what runs killed before
// they could drop them left. Its error says what Start failed to drop or
// list, which does not keep the server from being used.
func (c *Cluster) Swept() ([]string, error) { return c.swept, c.sweepErr }

// serverUser returns the user initdb and postgres run as: nil, meaning
// this process's own, unless that is root, which PostgreSQL refuses; then
// "nobody".
func serverUser() *proc.User {
	if os.Geteuid() != 0 {
		return nil
	}
	a := &proc.User{Name: "nobody", UID: 65534, GID: 65534}
	u, err := user.Lookup(a.Name)
	if err != nil {
		return a
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 == nil && err2 == nil {
		a.UID, a.GID = uint32(uid), uint32(gid)
	}
	return a
}

// initdb creates the data directory. The C locale keeps the cluster the
// same whatever locales the machine has; --no-sync is safe because the
// cluster is thrown away if the machine crashes. Like postgres, initdb
// runs in a process group of its own (see launch).
func initdb(ctx context.Context, bin, data string, runAs *proc.User) error {
	var out bytes.Buffer
	child, err := proc.Start(ctx, proc.Spec{
		Bin:  bin,
		Args: []string{"-D", data, "-U", superuser, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"},
		Dir:  filepath.Dir(data), Stdout: &out, Stderr: &out,
		WaitDelay: time.Second, Group: true, User: runAs,
	})
	if err == nil {
		err = child.Err()
	}
	if err != nil {
		detail := ""
		if runAs != nil {
			detail = fmt.Sprintf(" (run as %s, who must be able to reach %s)", runAs.Name, data)
		}
		if out.Len() > 0 {
			detail += "; its output:\n" + strings.TrimRight(out.String(), "\n")
		}
		return fmt.Errorf("pgcluster: %s: %w%s", bin, err, detail)
	}
	return nil
}

// launch starts the postmaster, its output going to the log file. It
// runs in a process group of its own, so that a Ctrl-C meant for this
// process does not shut the server down under it, and it gets an
// immediate shutdown (SIGQUIT) if this process dies.
func (c *Cluster) launch(bin, data string, runAs *proc.User) error {
	logf, err := os.OpenFile(c.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	defer logf.Close() // the server has its own descriptor
	// The server runs until Stop, whatever becomes of the context Start
	// was given.
	c.postmaster, err = proc.Start(context.Background(), proc.Spec{
		Bin:  bin,
		Args: []string{"-D", data, "-p", strconv.Itoa(port), "-k", c.dir, "-c", "listen_addresses="},
		Dir:  c.dir, Stdout: logf, Stderr: logf, Direct: true,
		Group: true, DeathSignal: syscall.SIGQUIT, User: runAs,
	})
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return nil
}

// await returns once the server accepts a connection, or with an error
// when it exits, StartTimeout passes or ctx ends.
func (c *Cluster) await(ctx context.Context) error {
	deadline := time.NewTimer(StartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		err := ping(ctx, c.admin, pollTimeout)
		if err == nil {
			return nil
		}
		select {
		case <-c.postmaster.Exited():
			return fmt.Errorf("pgcluster: postgres exited while starting: %v%s", c.postmaster.Err(), c.logExcerpt())
		case <-deadline.C:
			return fmt.Errorf("pgcluster: postgres accepted no connection within %v: %w%s", StartTimeout, err, c.logExcerpt())
		case <-ctx.Done():
			return fmt.Errorf("pgcluster: waiting for postgres to start: %w%s", context.Cause(ctx), c.logExcerpt())
		case <-tick.C:
		}
	}
}

// ping connects to dsn and disconnects.
func ping(ctx context.Context, dsn string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// socketDSN returns the URL that reaches database db on the server whose
// socket is in dir. The '/'s of dir are left as they are, which a query
// allows, so that the DSN stays readable in logs.
func socketDSN(dir, db string) string {
	return "postgres://" + superuser + "@/" + db + "?host=" + uriEscape(dir) + "&port=" + strconv.Itoa(port) + "&sslmode=disable"
}

// uriEscape percent-encodes every byte of s but the unreserved ones and
// '/'. It is not url.QueryEscape because libpq, and pgx after it, read a
// '+' as a '+', not a space.
func uriEscape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := range len(s) {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-._~/", c) >= 0:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// Stop shuts down a server Start started, with a fast shutdown (SIGINT to
// the postmaster) or, if that takes longer than StopTimeout, an immediate
// one (SIGQUIT), and SIGKILL if even that does not end it; then it removes
// the server's directory. It reports a shutdown that was not fast as an
// error, having cleaned up all the same. It does nothing to an external
// server. Afterwards NewDatabase and DropDatabase return ErrStopped. Stop
// may be called more than once; later calls return what the first
// returned.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.stop(true) })
	return c.stopErr
}

// stop ends the server, with a fast shutdown when graceful and with
// SIGKILL at once otherwise, and removes its directory.
func (c *Cluster) stop(graceful bool) error {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	if c.dir == "" {
		return nil
	}
	var errs []error
	if c.postmaster != nil {
		if err := c.shutdown(graceful); err != nil {
			errs = append(errs, err)
		}
	}
	c.mu.Lock()
	c.logTail = c.readLogTail()
	c.removed = true
	c.mu.Unlock()
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, fmt.Errorf("pgcluster: %w", err))
	}
	return errors.Join(errs...)
}

// shutdown stops the postmaster and returns once it has exited. It asks
// for a fast shutdown (SIGINT); after StopTimeout, for an immediate one
// (SIGQUIT), in which the postmaster still ends its backends; after
// quitTimeout more, it kills the postmaster, whose backends, each in a
// session of its own, exit when they notice it gone. A server that failed
// to start is not worth a clean shutdown, and may be a stand-in that
// inherited SIGINT as ignored: it is killed at once.
func (c *Cluster) shutdown(graceful bool) error {
	select {
	case <-c.postmaster.Exited():
		// It died by itself, which Start or the failing queries have
		// already reported.
		return nil
	default:
	}
	if !graceful {
		return c.kill()
	}
	if c.signalWait(syscall.SIGINT, StopTimeout) {
		if err := c.postmaster.Err(); err != nil {
			return fmt.Errorf("pgcluster: postgres fast shutdown: %w%s", err, c.logExcerpt())
		}
		return nil
	}
	var err error
	if c.signalWait(syscall.SIGQUIT, quitTimeout) {
		err = fmt.Errorf("pgcluster: postgres did not finish a fast shutdown within %v; shut it down immediately", StopTimeout)
	} else {
		err = fmt.Errorf("pgcluster: postgres did not stop within %v of SIGINT and %v of SIGQUIT; killed it", StopTimeout, quitTimeout)
		err = errors.Join(err, c.kill())
	}
	return fmt.Errorf("%w%s", err, c.logExcerpt())
}

// signalWait sends sig to the postmaster and reports whether it has exited
// within d.
func (c *Cluster) signalWait(sig syscall.Signal, d time.Duration) bool {
	if err := c.postmaster.Signal(sig); err != nil {
		return false // sig is not supported here
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.postmaster.Exited():
		return true
	case <-t.C:
		return false
	}
}

// kill kills the postmaster and waits for it to exit.
func (c *Cluster) kill() error {
	err := c.postmaster.Signal(syscall.SIGKILL)
	<-c.postmaster.Exited()
	if err != nil {
		return fmt.Errorf("pgcluster: kill postgres: %w", err)
	}
	return nil
}

// Log returns the end of the server's log, at most 8 KiB, for error
// messages. It still does after Stop, and is empty for an external server.
func (c *Cluster) Log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.removed {
		return c.logTail
	}
	return c.readLogTail()
}

// logExcerpt returns the end of the log as a suffix for an error message.
func (c *Cluster) logExcerpt() string {
	tail := c.Log()
	if tail == "" {
		return ""
	}
	return "\npostgres log:\n" + tail
}

// readLogTail returns the last logTailBytes of the log from the start of a
// line. The caller holds c.mu, so that the directory is not removed while
// the log is read.
func (c *Cluster) readLogTail() string {
	if c.logPath == "" {
		return ""
	}
	f, err := os.Open(c.logPath)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	off := max(0, fi.Size()-logTailBytes)
	buf := make([]byte, fi.Size()-off)
	n, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	buf = buf[:n]
	if off > 0 {
		if i := strings.IndexByte(string(buf), '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	return string(buf)
}
