package bank

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// SQLOptions tune a SQL store.
type SQLOptions struct {
	// TTL is how long an idempotency record is kept after it is created.
	// It must exceed the longest window in which a client may retry a
	// key: a retry after it executes again. Default 24h.
	TTL time.Duration
	// Lease is how long a claim holds a running key before another
	// request may take it over. A taken-over claim can no longer commit,
	// so a short lease costs a wasted execution attempt, never a double
	// effect; a long one keeps duplicates of a crashed executor waiting.
	// Default 5s.
	Lease time.Duration
	// SweepEvery is the pause between sweeps of expired records; zero
	// picks min(TTL/2, 1m); negative disables the sweeper.
	SweepEvery time.Duration
	// Hooks inject crashes around a keyed debit's commit.
	Hooks Hooks
	// Now is the clock; nil is time.Now. Leases and TTLs compare
	// instants of this clock, so servers sharing a store need clocks
	// that agree to well within a lease.
	Now func() time.Time
	// OnSweep, if set, is told how many records each sweep deleted, or
	// the sweep's error.
	OnSweep func(deleted int64, err error)
}

// Defaults of SQLOptions.
const (
	DefaultTTL   = 24 * time.Hour
	DefaultLease = 5 * time.Second
)

func (o *SQLOptions) fill() {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.SweepEvery == 0 {
		o.SweepEvery = min(o.TTL/2, time.Minute)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// scope is the idempotency records' scope: the bank's keys share one.
const scope = "bank"

// Record states, the status column.
const (
	stRunning   = "running"
	stSucceeded = "succeeded"
	stFailed    = "failed"
)

// dialect holds what differs between the SQL engines.
type dialect struct {
	name string
	// rebind turns the ? placeholders of a query into the engine's.
	rebind func(string) string
	// schema creates the tables if they are absent.
	schema []string
}

// SQLStore is a Store in a SQL database: the accounts and the
// idempotency records in two tables of one database, so that a keyed
// debit commits its balance change and its record in one transaction.
// Several servers may share one database (PostgreSQL): a key's claim is
// a row, taken by INSERT ... ON CONFLICT DO NOTHING or by a conditional
// UPDATE that only one of two racing takers wins, and a keyed debit
// commits only while its claim still holds the key.
type SQLStore struct {
	db   *sql.DB
	d    dialect
	opts SQLOptions
	q    queries

	// wake is closed and replaced whenever this process finishes or
	// releases a key, so that local waiters look again at once;
	// waiters on another server's key poll.
	mu   sync.Mutex
	wake chan struct{}

	stop      chan struct{}
	swept     sync.WaitGroup
	closeOnce sync.Once
}

// queries are the store's statements, in the engine's placeholders.
type queries struct {
	getAccount, insertAccount, debit string
	claimInsert, claimRead, takeOver string
	finish, release, sweep           string
}

func newSQLStore(db *sql.DB, d dialect, opts SQLOptions) (*SQLStore, error) {
	opts.fill()
	s := &SQLStore{db: db, d: d, opts: opts, wake: make(chan struct{}), stop: make(chan struct{})}
	r := d.rebind
	s.q = queries{
		getAccount:    r(`SELECT balance, debits FROM accounts WHERE name = ?`),
		insertAccount: r(`INSERT INTO accounts (name, balance, debits) VALUES (?, ?, 0) ON CONFLICT (name) DO NOTHING`),
		debit:         r(`UPDATE accounts SET balance = balance - ?, debits = debits + 1 WHERE name = ? AND balance >= ? RETURNING balance, debits`),
		claimInsert: r(`INSERT INTO idempotency_key (scope, key, fingerprint, status, token, lease_until, created_at, expires_at)
			VALUES (?, ?, ?, 'running', ?, ?, ?, ?) ON CONFLICT (scope, key) DO NOTHING`),
		claimRead: r(`SELECT fingerprint, status, lease_until, expires_at, ans_status, ans_msg, ans_account, ans_balance, ans_debits, ans_budget
			FROM idempotency_key WHERE scope = ? AND key = ?`),
		// A record may be taken over, by any fingerprint, unless it is
		// running under a live lease or holds an answer within its TTL:
		// a failed record executed nothing, and the claim of an expired
		// lease can no longer commit. Of two racing takers one matches.
		takeOver: r(`UPDATE idempotency_key SET fingerprint = ?, status = 'running', token = ?, lease_until = ?,
			created_at = ?, expires_at = ?, ans_status = NULL, ans_msg = NULL, ans_account = NULL,
			ans_balance = NULL, ans_debits = NULL, ans_budget = NULL
			WHERE scope = ? AND key = ?
			AND NOT (status = 'running' AND lease_until > ?) AND (status <> 'succeeded' OR expires_at <= ?)`),
		// The TTL runs from the answer: a record whose execution
		// outlasted the TTL still deduplicates the retries that follow.
		finish: r(`UPDATE idempotency_key SET status = 'succeeded', lease_until = 0, expires_at = ?,
			ans_status = ?, ans_msg = ?, ans_account = ?, ans_balance = ?, ans_debits = ?, ans_budget = ?
			WHERE scope = ? AND key = ? AND status = 'running' AND token = ?`),
		release: r(`UPDATE idempotency_key SET status = 'failed', lease_until = 0, expires_at = ? WHERE scope = ? AND key = ? AND status = 'running' AND token = ?`),
		sweep:   r(`DELETE FROM idempotency_key WHERE expires_at <= ? AND NOT (status = 'running' AND lease_until > ?)`),
	}
	if err := createSchema(db, d); err != nil {
		return nil, err
	}
	if opts.SweepEvery > 0 {
		s.swept.Add(1)
		go s.sweeper()
	}
	return s, nil
}

// createSchema creates the tables in one transaction, so that servers
// starting together on one database do not race.
func createSchema(db *sql.DB, d dialect) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("bank: %s: %w", d.name, err)
	}
	defer tx.Rollback()
	for _, stmt := range d.schema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("bank: %s schema: %w", d.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("bank: %s schema: %w", d.name, err)
	}
	return nil
}

// schemaStatements is the schema of an idempotency table with leases:
// one record per key holding its request's fingerprint, its state
// (running, succeeded, failed), the lease a running claim holds and when the
// record expires, with the answer in typed columns and the claim's token
// for fencing. blob is the
// engine's binary type.
func schemaStatements(blob string) []string {
	return []string{
		`CREATE TABLE IF NOT EXISTS accounts (
			name    ` + blob + ` NOT NULL PRIMARY KEY,
			balance BIGINT NOT NULL,
			debits  BIGINT NOT NULL
		)`,
		`CREATE TABLE IF NOT EXISTS idempotency_key (
			scope       TEXT   NOT NULL,
			key         ` + blob + ` NOT NULL,
			fingerprint ` + blob + ` NOT NULL,
			status      TEXT   NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
			token       BIGINT NOT NULL,
			lease_until BIGINT NOT NULL,
			ans_status  INTEGER,
			ans_msg     TEXT,
			ans_account ` + blob + `,
			ans_balance BIGINT,
			ans_debits  BIGINT,
			ans_budget  BIGINT,
			created_at  BIGINT NOT NULL,
			expires_at  BIGINT NOT NULL,
			PRIMARY KEY (scope, key)
		)`,
		`CREATE INDEX IF NOT EXISTS idempotency_key_expires ON idempotency_key (expires_at)`,
	}
}

// Kind is the engine's name: sqlite or postgres.
func (s *SQLStore) Kind() string { return s.d.name }

// DB is the store's database, for tests and inspection.
func (s *SQLStore) DB() *sql.DB { return s.db }

// Close stops the sweeper and closes the database.
func (s *SQLStore) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		s.swept.Wait()
		err = s.db.Close()
	})
	return err
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// opContext bounds one store operation: a store that does not answer
// becomes an error, not a request that hangs.
func opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), opTimeout)
}

// opTimeout bounds one store operation.
const opTimeout = 10 * time.Second

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Get implements Store.
func (s *SQLStore) Get(account []byte) (Account, error) {
	ctx, cancel := opContext()
	defer cancel()
	a := Account{Balance: DefaultBalance}
	err := s.db.QueryRowContext(ctx, s.q.getAccount, account).Scan(&a.Balance, &a.Debits)
	if errors.Is(err, sql.ErrNoRows) {
		return a, nil
	}
	if err != nil {
		return Account{}, fmt.Errorf("bank: store: %w", err)
	}
	return a, nil
}

// Debit implements Store: the balance change and, with a hold, the
// record in one transaction.
func (s *SQLStore) Debit(account []byte, amount int64, h Hold, ans func(Account) Answer) (Account, error) {
	ctx, cancel := opContext()
	defer cancel()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Account{}, fmt.Errorf("bank: store: %w", err)
	}
	defer tx.Rollback() // a no-op after Commit
	// Names and keys are bytes on the wire, bound as bytes: a BLOB in
	// SQLite, a BYTEA in PostgreSQL, whatever their encoding.
	var a Account
	err = tx.QueryRowContext(ctx, s.q.debit, amount, account, amount).Scan(&a.Balance, &a.Debits)
	if errors.Is(err, sql.ErrNoRows) {
		// The account is new, or its balance is too low.
		if _, err = tx.ExecContext(ctx, s.q.insertAccount, account, int64(DefaultBalance)); err == nil {
			err = tx.QueryRowContext(ctx, s.q.debit, amount, account, amount).Scan(&a.Balance, &a.Debits)
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		if err = tx.QueryRowContext(ctx, s.q.getAccount, account).Scan(&a.Balance, &a.Debits); err == nil {
			return a, ErrInsufficientFunds
		}
	}
	if err != nil {
		return Account{}, fmt.Errorf("bank: store: %w", err)
	}
	if h.Key != "" {
		if err := s.finishTx(ctx, tx, h, ans(a)); err != nil {
			return Account{}, err
		}
		callHook(s.opts.Hooks.BeforeCommit)
	}
	if err := tx.Commit(); err != nil {
		return Account{}, fmt.Errorf("%w: %w", ErrCommitUnknown, err)
	}
	if h.Key != "" {
		s.broadcast()
		callHook(s.opts.Hooks.AfterCommit)
	}
	return a, nil
}

// execer is what a *sql.DB and a *sql.Tx share.
type execer interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}

// finishTx records ans under the held key, if h still holds it.
func (s *SQLStore) finishTx(ctx context.Context, ex execer, h Hold, ans Answer) error {
	res, err := ex.ExecContext(ctx, s.q.finish, ms(s.opts.Now())+s.opts.TTL.Milliseconds(),
		int64(ans.Status), ans.Msg, []byte(ans.Account), ans.Balance, ans.Debits, int64(ans.Budget),
		scope, []byte(h.Key), int64(h.Token))
	if err != nil {
		return fmt.Errorf("bank: store: %w", err)
	}
	return held(res)
}

// held maps an UPDATE of the holder's row to ErrLeaseLost when the row no
// longer belonged to the holder.
func held(res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("bank: store: %w", err)
	}
	if n != 1 {
		return ErrLeaseLost
	}
	return nil
}

// Finish implements Store.
func (s *SQLStore) Finish(h Hold, ans Answer) error {
	ctx, cancel := opContext()
	defer cancel()
	err := s.finishTx(ctx, s.db, h, ans)
	s.broadcast()
	return err
}

// Release implements Store: the record becomes failed, which the next
// claim takes over.
func (s *SQLStore) Release(h Hold) error {
	ctx, cancel := opContext()
	defer cancel()
	res, err := s.db.ExecContext(ctx, s.q.release, ms(s.opts.Now())+s.opts.TTL.Milliseconds(), scope, []byte(h.Key), int64(h.Token))
	s.broadcast()
	if err != nil {
		return fmt.Errorf("bank: store: %w", err)
	}
	return held(res)
}

// row is an idempotency record as read.
type row struct {
	fp                Fingerprint
	status            string
	leaseUntil, expAt int64
	ans               Answer
}

func (s *SQLStore) read(ctx context.Context, key string) (row, bool, error) {
	var (
		r                 row
		fp                []byte
		st, bal, deb, bud sql.NullInt64
		msg               sql.NullString
		acct              []byte
	)
	err := s.db.QueryRowContext(ctx, s.q.claimRead, scope, []byte(key)).Scan(&fp, &r.status, &r.leaseUntil, &r.expAt, &st, &msg, &acct, &bal, &deb, &bud)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("bank: store: %w", err)
	}
	if len(fp) != len(r.fp) {
		return r, false, fmt.Errorf("bank: store: record %q has a %d-byte fingerprint", key, len(fp))
	}
	copy(r.fp[:], fp)
	r.ans = Answer{Status: proto.Status(st.Int64), Msg: msg.String, Account: string(acct), Balance: bal.Int64, Debits: deb.Int64, Budget: uint32(bud.Int64)}
	return r, true, nil
}

// Claim implements Store: insert the record as running, or read it and
// take it over when it is failed, its lease expired or its TTL passed; a
// record running under a live lease, or succeeded within its TTL, is not
// taken.
func (s *SQLStore) Claim(key string, fp Fingerprint) (Claimed, error) {
	ctx, cancel := opContext()
	defer cancel()
	for {
		now := ms(s.opts.Now())
		tok := newToken()
		lease := now + s.opts.Lease.Milliseconds()
		res, err := s.db.ExecContext(ctx, s.q.claimInsert, scope, []byte(key), fp[:], int64(tok), lease, now, now+s.opts.TTL.Milliseconds())
		if err != nil {
			return Claimed{}, fmt.Errorf("bank: store: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return Claimed{State: ClaimTaken, Hold: Hold{Key: key, Token: tok}}, nil
		}
		r, ok, err := s.read(ctx, key)
		if err != nil {
			return Claimed{}, err
		}
		if !ok {
			continue // swept between the insert and the read
		}
		live := r.status == stRunning && r.leaseUntil > now
		answered := r.status == stSucceeded && r.expAt > now
		switch {
		case (live || answered) && r.fp != fp:
			return Claimed{State: ClaimConflict}, nil
		case answered:
			return Claimed{State: ClaimDone, Answer: r.ans}, nil
		case live:
			return Claimed{State: ClaimRunning}, nil
		}
		res, err = s.db.ExecContext(ctx, s.q.takeOver, fp[:], int64(tok), lease, now, now+s.opts.TTL.Milliseconds(),
			scope, []byte(key), now, now)
		if err != nil {
			return Claimed{}, fmt.Errorf("bank: store: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return Claimed{State: ClaimTaken, Hold: Hold{Key: key, Token: tok}}, nil
		}
		// Another taker won the race: look again.
	}
}

// Await implements Store. It looks at the record again whenever this
// process finishes or releases a key, and otherwise polls, more slowly
// as it waits, since the holder may be another server.
func (s *SQLStore) Await(key string, fp Fingerprint, deadline time.Time, done <-chan struct{}) (Answer, error) {
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	pause := time.Millisecond
	for {
		s.mu.Lock()
		wake := s.wake
		s.mu.Unlock()
		ctx, cancel := context.WithDeadline(context.Background(), minTime(deadline, time.Now().Add(opTimeout)))
		r, ok, err := s.read(ctx, key)
		cancel()
		now := ms(s.opts.Now())
		switch {
		case err != nil && !time.Now().Before(deadline):
			return Answer{}, ErrAwaitExpired
		case err != nil:
			return Answer{}, err
		case !ok || r.fp != fp || r.status == stFailed:
			return Answer{}, ErrReleased
		case r.status == stSucceeded && r.expAt > now:
			return r.ans, nil
		case r.status == stSucceeded:
			return Answer{}, ErrReleased // past its TTL: forgotten
		case r.leaseUntil <= now:
			return Answer{}, ErrReleased // the claim may be taken over
		}
		wait := min(pause, time.Until(deadline), time.Duration(r.leaseUntil-now+1)*time.Millisecond)
		if wait <= 0 {
			return Answer{}, ErrAwaitExpired
		}
		t.Reset(wait)
		callHook(s.opts.Hooks.AwaitWaiting)
		select {
		case <-t.C:
		case <-wake:
			if !t.Stop() {
				<-t.C
			}
		case <-done:
			return Answer{}, ErrClosing
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

func (s *SQLStore) broadcast() {
	s.mu.Lock()
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// Sweep deletes the records whose TTL passed, except a running one under
// a live lease, and returns how many it deleted.
func (s *SQLStore) Sweep() (int64, error) {
	ctx, cancel := opContext()
	defer cancel()
	now := ms(s.opts.Now())
	res, err := s.db.ExecContext(ctx, s.q.sweep, now, now)
	if err != nil {
		return 0, fmt.Errorf("bank: store: sweep: %w", err)
	}
	return res.RowsAffected()
}

func (s *SQLStore) sweeper() {
	defer s.swept.Done()
	t := time.NewTicker(s.opts.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			n, err := s.Sweep()
			if s.opts.OnSweep != nil {
				s.opts.OnSweep(n, err)
			}
		}
	}
}

// newToken returns a claim's token: random, so that claims of different
// servers on one database differ, and never 0.
func newToken() uint64 {
	return rand.Uint64()>>1 | 1
}

// dollarRebind numbers the ? placeholders as $1, $2, ... for PostgreSQL.
func dollarRebind(q string) string {
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func keepRebind(q string) string { return q }
