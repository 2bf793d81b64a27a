package cases

// durabilityMutants are the bugs of issue 26 ("Behaviours no test pins") that
// the durability group must catch.
var durabilityMutants = []mutant{
	{
		name: "waiting_duplicate_ignores_fingerprint",
		bug:  "the fingerprint is compared only with an answered record: a request reusing a running key with another body waits for the original and is handed its answer, instead of being refused as key reuse",
		file: "internal/bank/sqlstore.go",
		old:  "\t\tcase (live || answered) && r.fp != fp:\n" + claimToAwait + "\t\tcase !ok || r.fp != fp || r.status == stFailed:\n",
		new:  "\t\tcase answered && r.fp != fp:\n" + claimToAwait + "\t\tcase !ok || r.status == stFailed:\n",
		catch: map[string]string{
			"duplicate_waits_across_instances_sqlite":   "reuseOnB=OK balance=990 exec=1 replayed=true, want INVALID_ARGUMENT",
			"duplicate_waits_across_instances_postgres": "reuseOnB=OK balance=990 exec=1 replayed=true, want INVALID_ARGUMENT",
		},
	},
	{
		name: "running_key_reuse_refused_late",
		bug:  "Claim compares the fingerprint only with an answered record, so a request reusing a running key with another body is sent to Await, which refuses it only once the original has answered",
		file: "internal/bank/sqlstore.go",
		old:  "\t\tcase (live || answered) && r.fp != fp:\n",
		new:  "\t\tcase answered && r.fp != fp:\n",
		catch: map[string]string{
			"duplicate_waits_across_instances_sqlite":   "debitExecAAtReuse=1, want 0",
			"duplicate_waits_across_instances_postgres": "debitExecAAtReuse=1, want 0",
		},
	},
	{
		name: "expired_record_replayed_until_swept",
		bug:  "Claim takes a succeeded record for an answer whatever its expiry, relying on the sweeper to delete expired ones: a key reused past its TTL but before the next sweep is replayed",
		file: "internal/bank/sqlstore.go",
		old:  "answered := r.status == stSucceeded && r.expAt > now\n",
		new:  "answered := r.status == stSucceeded // the sweeper deletes expired records\n",
		catch: map[string]string{
			"ttl_expired_key_executes_again_sqlite":   "afterTTLUnswept=OK balance=990 exec=1 replayed=true, want OK balance=980 exec=2 replayed=false",
			"ttl_expired_key_executes_again_postgres": "afterTTLUnswept=OK balance=990 exec=1 replayed=true, want OK balance=980 exec=2 replayed=false",
		},
	},
	{
		name: "debit_reads_balance_outside_tx",
		bug:  "Debit checks the funds by reading the balance with s.db before its transaction, then writes back that balance less the amount: concurrent debits of one account write stale balances over each other",
		file: "internal/bank/sqlstore.go",
		old: "\ttx, err := s.db.BeginTx(ctx, nil)\n\tif err != nil {\n\t\treturn Account{}, fmt.Errorf(\"bank: store: %w\", err)\n\t}\n" +
			"\tdefer tx.Rollback() // a no-op after Commit\n" +
			"\t// Names and keys are bytes on the wire, bound as bytes: a BLOB in\n\t// SQLite, a BYTEA in PostgreSQL, whatever their encoding.\n" +
			"\tvar a Account\n\terr = tx.QueryRowContext(ctx, s.q.debit, amount, account, amount).Scan(&a.Balance, &a.Debits)\n",
		new: "\tvar a Account\n\terr := s.db.QueryRowContext(ctx, s.q.getAccount, account).Scan(&a.Balance, &a.Debits)\n" +
			"\ttx, txErr := s.db.BeginTx(ctx, nil)\n\tif txErr != nil {\n\t\treturn Account{}, fmt.Errorf(\"bank: store: %w\", txErr)\n\t}\n" +
			"\tdefer tx.Rollback() // a no-op after Commit\n" +
			"\tswitch {\n\tcase err == nil && a.Balance >= amount:\n" +
			"\t\ta.Balance, a.Debits = a.Balance-amount, a.Debits+1\n" +
			"\t\t_, err = tx.ExecContext(ctx, s.d.rebind(`UPDATE accounts SET balance = ?, debits = ? WHERE name = ?`), a.Balance, a.Debits, account)\n" +
			"\tcase err == nil:\n\t\terr = sql.ErrNoRows // too low: the statements below report it\n\t}\n",
		catch: map[string]string{
			"debits_add_up_across_instances_sqlite":   ", want 600: the account must hold each of the 40 debits the servers executed",
			"debits_add_up_across_instances_postgres": ", want 600: the account must hold each of the 40 debits the servers executed",
		},
	},
	{
		name: "commit_unknown_returned_plain",
		bug:  "Debit wraps a failed COMMIT like any other store error, dropping ErrCommitUnknown: the server answers UNAVAILABLE, which says the debit did not execute, and releases the key, so a retry executes at once instead of waiting out the claim's lease",
		file: "internal/bank/sqlstore.go",
		old:  "return Account{}, fmt.Errorf(\"%w: %w\", ErrCommitUnknown, err)",
		new:  "return Account{}, fmt.Errorf(\"bank: store: %w\", err)",
		catch: map[string]string{
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
