package durability

import "github.com/rpcbench/rpcbench/internal/scenario/scenariotest"

// durabilityMutants are the bugs of issue 26 ("Behaviours no test pins") that
// the durability group must catch.
var durabilityMutants = []scenariotest.Mutant{
	{
		Name: "waiting_duplicate_ignores_fingerprint",
		Bug:  "the fingerprint is compared only with an answered record: a request reusing a running key with another body waits for the original and is handed its answer, instead of being refused as key reuse",
		File: "internal/bank/sqlstore.go",
		Old:  "\t\tcase (live || answered) && r.fp != fp:\n" + claimToAwait + "\t\tcase !ok || r.fp != fp || r.status == stFailed:\n",
		New:  "\t\tcase answered && r.fp != fp:\n" + claimToAwait + "\t\tcase !ok || r.status == stFailed:\n",
		Catch: map[string]string{
			"duplicate_waits_across_instances_sqlite":   "reuseOnB=OK balance=990 exec=1 replayed=true, want INVALID_ARGUMENT",
			"duplicate_waits_across_instances_postgres": "reuseOnB=OK balance=990 exec=1 replayed=true, want INVALID_ARGUMENT",
		},
	},
	{
		Name: "running_key_reuse_refused_late",
		Bug:  "Claim compares the fingerprint only with an answered record, so a request reusing a running key with another body is sent to Await, which refuses it only once the original has answered",
		File: "internal/bank/sqlstore.go",
		Old:  "\t\tcase (live || answered) && r.fp != fp:\n",
		New:  "\t\tcase answered && r.fp != fp:\n",
		Catch: map[string]string{
			"duplicate_waits_across_instances_sqlite":   "debitExecAAtReuse=1, want 0",
			"duplicate_waits_across_instances_postgres": "debitExecAAtReuse=1, want 0",
		},
	},
	{
		Name: "expired_record_replayed_until_swept",
		Bug:  "Claim takes a succeeded record for an answer whatever its expiry, relying on the sweeper to delete expired ones: a key reused past its TTL but before the next sweep is replayed",
		File: "internal/bank/sqlstore.go",
		Old:  "answered := r.status == stSucceeded && r.expAt > now\n",
		New:  "answered := r.status == stSucceeded // the sweeper deletes expired records\n",
		Catch: map[string]string{
			"ttl_expired_key_executes_again_sqlite":   "afterTTLUnswept=OK balance=990 exec=1 replayed=true, want OK balance=980 exec=2 replayed=false",
			"ttl_expired_key_executes_again_postgres": "afterTTLUnswept=OK balance=990 exec=1 replayed=true, want OK balance=980 exec=2 replayed=false",
		},
	},
	{
		Name: "debit_reads_balance_outside_tx",
		Bug:  "Debit checks the funds by reading the balance with s.db before its transaction, then writes back that balance less the amount: concurrent debits of one account write stale balances over each other",
		File: "internal/bank/sqlstore.go",
		Old: "\ttx, err := s.db.BeginTx(ctx, nil)\n\tif err != nil {\n\t\treturn Account{}, fmt.Errorf(\"bank: store: %w\", err)\n\t}\n" +
			"\tdefer tx.Rollback() // a no-op after Commit\n" +
			"\t// Names and keys are bytes on the wire, bound as bytes: a BLOB in\n\t// SQLite, a BYTEA in PostgreSQL, whatever their encoding.\n" +
			"\tvar a Account\n\terr = tx.QueryRowContext(ctx, s.q.debit, amount, account, amount).Scan(&a.Balance, &a.Debits)\n",
		New: "\tvar a Account\n\terr := s.db.QueryRowContext(ctx, s.q.getAccount, account).Scan(&a.Balance, &a.Debits)\n" +
			"\ttx, txErr := s.db.BeginTx(ctx, nil)\n\tif txErr != nil {\n\t\treturn Account{}, fmt.Errorf(\"bank: store: %w\", txErr)\n\t}\n" +
			"\tdefer tx.Rollback() // a no-op after Commit\n" +
			"\tswitch {\n\tcase err == nil && a.Balance >= amount:\n" +
			"\t\ta.Balance, a.Debits = a.Balance-amount, a.Debits+1\n" +
			"\t\t_, err = tx.ExecContext(ctx, s.d.rebind(`UPDATE accounts SET balance = ?, debits = ? WHERE name = ?`), a.Balance, a.Debits, account)\n" +
			"\tcase err == nil:\n\t\terr = sql.ErrNoRows // too low: the statements below report it\n\t}\n",
		Catch: map[string]string{
			"debits_add_up_across_instances_sqlite":   ", want 600: the account must hold each of the 40 debits the servers executed",
			"debits_add_up_across_instances_postgres": ", want 600: the account must hold each of the 40 debits the servers executed",
		},
	},
	{
		Name: "commit_unknown_returned_plain",
		Bug:  "Debit wraps a failed COMMIT like any other store error, dropping ErrCommitUnknown: the server answers UNAVAILABLE, which says the debit did not execute, and releases the key, so a retry executes at once instead of waiting out the claim's lease",
		File: "internal/bank/sqlstore.go",
		Old:  "return Account{}, fmt.Errorf(\"%w: %w\", ErrCommitUnknown, err)",
		New:  "return Account{}, fmt.Errorf(\"bank: store: %w\", err)",
		Catch: map[string]string{
			"commit_outcome_unknown": "answerLost=RESPONSE/UNAVAILABLE..RESPONSE/OK, want TIMEOUT..RESPONSE/OK",
		},
	},
}

// claimToAwait is sqlstore.go's text between Claim's refusal of a running
// key's reuse and Await's: the two places where a request meeting a
// running key has its fingerprint compared.
const claimToAwait = `			return Claimed{State: ClaimConflict}, nil
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
`

// storeMutants are the durable store's bugs of issue 10, listed with
// issue 9's, that the durability group must catch.
var storeMutants = []scenariotest.Mutant{
	// Issue 10: durable and shared dedup.
	{
		Name: "record_committed_after_debit",
		Bug:  "the SQL store commits the balance change, then writes the idempotency record in a statement of its own: a crash between the two leaves a debit no retry can see",
		File: "internal/bank/sqlstore.go",
		Old:  "\tif h.Key != \"\" {\n\t\tif err := s.finishTx(ctx, tx, h, ans(a)); err != nil {\n\t\t\treturn Account{}, err\n\t\t}\n\t\tcallHook(s.opts.Hooks.BeforeCommit)\n\t}\n\tif err := tx.Commit(); err != nil {\n\t\treturn Account{}, fmt.Errorf(\"%w: %w\", ErrCommitUnknown, err)\n\t}\n\tif h.Key != \"\" {\n\t\ts.broadcast()\n\t\tcallHook(s.opts.Hooks.AfterCommit)\n\t}\n",
		New:  "\tif err := tx.Commit(); err != nil {\n\t\treturn Account{}, fmt.Errorf(\"%w: %w\", ErrCommitUnknown, err)\n\t}\n\tif h.Key != \"\" {\n\t\tcallHook(s.opts.Hooks.AfterCommit)\n\t\tif err := s.finishTx(ctx, s.db, h, ans(a)); err != nil {\n\t\t\treturn Account{}, err\n\t\t}\n\t\ts.broadcast()\n\t}\n",
		Catch: map[string]string{
			"durable_dedup_survives_crash_sqlite": "result=OK balance=980 exec=2 replayed=false",
		},
	},
	{
		Name: "await_ignores_lease_expiry",
		Bug:  "a duplicate waiting on a running record keeps waiting after the record's lease expired, instead of claiming the key again: the retries of a crashed executor all time out",
		File: "internal/bank/sqlstore.go",
		Old:  "\t\tcase r.leaseUntil <= now:\n\t\t\treturn Answer{}, ErrReleased // the claim may be taken over\n",
		New:  "",
		Catch: map[string]string{
			"lease_expiry_takeover_sqlite": "takeovers=0, want 1",
		},
	},
}
