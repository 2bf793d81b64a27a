// Package oracle holds the execution oracles a user gives rpcbench for
// a service it did not write: something the service keeps that moves by
// a known amount with each execution of the judged method, read before
// and after each attempt (proxy.Oracle). Whether a call executed is
// decided by them, never by the service's answers.
//
//   - Observe: an integer field of a read call's answer (a balance, a
//     counter).
//   - SQL: a query that counts effects, on SQLite or PostgreSQL.
//   - Log: lines of the service's own output that match a pattern, for
//     a service rpcbench starts.
package oracle

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // the "sqlite" driver

	"github.com/rpcbench/rpcbench/internal/rawgrpc"
	"github.com/rpcbench/rpcbench/internal/target"
)

// ErrUsage wraps what is wrong with an oracle as given: a DSN that
// names no database rpcbench reads, a pattern that does not compile.
var ErrUsage = errors.New("oracle")

// executions turns a move of count into executions of perExec each.
func executions(what string, moved, perExec int64) (int, error) {
	if perExec == 0 {
		return 0, fmt.Errorf("%s: no move per execution given", what)
	}
	if moved%perExec != 0 || moved/perExec < 0 {
		return 0, fmt.Errorf("%s moved by %d, not a whole number of executions of %+d: does something else change it?", what, moved, perExec)
	}
	return int(moved / perExec), nil
}

// Observe reads an integer field of a read call's answer on a
// connection of its own to the service.
type Observe struct {
	*target.Observe
	Addr string

	mu sync.Mutex
	c  *rawgrpc.Conn
}

// Read calls the observe method and returns its field, dialling again
// after a failed read.
func (o *Observe) Read(ctx context.Context) (int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.c == nil {
		c, err := rawgrpc.DialOptions(ctx, o.Addr, rawgrpc.Options{MaxBody: target.MaxAnswer})
		if err != nil {
			return 0, fmt.Errorf("observe %s: %w", o.Addr, err)
		}
		o.c = c
	}
	v, err := o.Observe.Read(ctx, o.c)
	if err != nil {
		o.c.Close()
		o.c = nil
	}
	return v, err
}

// Executions is the move over PerExec.
func (o *Observe) Executions(moved int64) (int, error) {
	return executions("."+o.Field, moved, o.PerExec)
}

// Close closes its connection.
func (o *Observe) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.c != nil {
		o.c.Close()
		o.c = nil
	}
}

// SQL counts effects with a query that answers one integer: "SELECT
// count(*) FROM orders".
type SQL struct {
	Query   string
	PerExec int64
	db      *sql.DB
	what    string
}

// OpenSQL opens the database dsn names: "sqlite:PATH" (opened read
// only), or a PostgreSQL URL (postgres://, postgresql://) or key=value
// DSN, as pgx reads them. It runs the query once, so that a query that
// does not count is a usage error before anything runs.
func OpenSQL(ctx context.Context, dsn, query string, perExec int64) (*SQL, error) {
	var db *sql.DB
	what := ""
	switch path, ok := strings.CutPrefix(dsn, "sqlite:"); {
	case ok:
		if path == "" || strings.ContainsAny(path, "?#%") {
			return nil, fmt.Errorf("%w: sqlite path %q must be non-empty, without ?, # or %%", ErrUsage, path)
		}
		var err error
		if db, err = sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)"); err != nil {
			return nil, fmt.Errorf("%w: sqlite %s: %v", ErrUsage, path, err)
		}
		what = "sqlite " + path
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"), strings.Contains(dsn, "="):
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return nil, fmt.Errorf("%w: postgres: %v", ErrUsage, err)
		}
		db = stdlib.OpenDB(*cfg)
		what = "postgres " + cfg.Database
	default:
		return nil, fmt.Errorf("%w: database %q: give sqlite:PATH, a postgres:// URL or a key=value PostgreSQL DSN", ErrUsage, dsn)
	}
	db.SetMaxOpenConns(1)
	s := &SQL{Query: query, PerExec: perExec, db: db, what: what}
	if _, err := s.Read(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	return s, nil
}

// Read runs the query.
func (s *SQL) Read(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var n int64
	if err := s.db.QueryRowContext(ctx, s.Query).Scan(&n); err != nil {
		return 0, fmt.Errorf("%s: %q: %v", s.what, s.Query, err)
	}
	return n, nil
}

// Executions is the move over PerExec.
func (s *SQL) Executions(moved int64) (int, error) {
	return executions(fmt.Sprintf("%q", s.Query), moved, s.PerExec)
}

// Close closes the database.
func (s *SQL) Close() { s.db.Close() }

// Describe says what the oracle reads.
func (s *SQL) Describe() string {
	return fmt.Sprintf("count-sql %q on %s (%+d per execution)", s.Query, s.what, s.PerExec)
}

// Log counts the lines of a service's output that match a pattern: one
// per execution. Its Writer takes the output.
type Log struct {
	Pattern *regexp.Regexp

	mu    sync.Mutex
	count int64
	w     *io.PipeWriter
	done  chan struct{}
}

// maxLogLine bounds a line of the service's output Log reads; a longer
// one is cut, and its rest read as a line of its own.
const maxLogLine = 64 << 10

// NewLog counts the lines that match pattern.
func NewLog(pattern string) (*Log, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("%w: log pattern %q: %v", ErrUsage, pattern, err)
	}
	l := &Log{Pattern: re, done: make(chan struct{})}
	r, w := io.Pipe()
	l.w = w
	go func() {
		defer close(l.done)
		br := bufio.NewReaderSize(r, maxLogLine)
		for {
			line, err := br.ReadSlice('\n')
			if len(line) > 0 && re.Match(line) {
				l.mu.Lock()
				l.count++
				l.mu.Unlock()
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				r.CloseWithError(err)
				return
			}
		}
	}()
	return l, nil
}

// Write takes the service's output.
func (l *Log) Write(b []byte) (int, error) { return l.w.Write(b) }

// Close ends the output and waits for its last line to be counted.
func (l *Log) Close() {
	l.w.Close()
	<-l.done
}

// Read returns how many lines matched so far.
func (l *Log) Read(context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count, nil
}

// Executions is the number of new matching lines.
func (l *Log) Executions(moved int64) (int, error) {
	return executions(fmt.Sprintf("lines matching %q", l.Pattern), moved, 1)
}

// Describe says what the oracle reads.
func (l *Log) Describe() string {
	return fmt.Sprintf("log lines matching %q (one per execution)", l.Pattern)
}
