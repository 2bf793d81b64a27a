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
