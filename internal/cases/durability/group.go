package durability

import (
	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// Group holds the scenarios in which servers crash and
// share stores: exactly-once effects across restarts and instances.
const Group = "durability"

// Cases lists the durability group in run order: each
// scenario once per store it runs on.
func Cases() []scenario.Case {
	var out []scenario.Case
	add := func(name, doc string, kinds []string, run func(*scenario.T, string)) {
		for _, k := range kinds {
			c := scenario.Case{Name: name, Group: Group, Doc: doc, Body: func(t *scenario.T) { run(t, k) }}
			if len(kinds) > 1 {
				c.Name, c.Doc = name+"_"+k, doc+" ("+k+")"
			}
			if k == bank.KindPostgres {
				c.Needs = []string{scenario.NeedsPostgres}
			}
			out = append(out, c)
		}
	}
	sql := []string{bank.KindSQLite, bank.KindPostgres}
	add("durable_dedup_survives_crash",
		"a keyed debit commits and the server is SIGKILLed before answering; the retry reaches a new server on the same store and is replayed: executed once",
		sql, durableDedupSurvivesCrash)
	add("crash_before_commit_leaves_nothing",
		"the server is SIGKILLed inside the debit's transaction; after the claim's lease the retry takes the key over and executes once",
		sql, crashBeforeCommitLeavesNothing)
	add("memory_store_loses_dedup",
		"negative control: the same crash after commit with the in-memory store; the restarted server executes the retry again",
		[]string{bank.KindMemory}, memoryStoreLosesDedup)
	add("dedup_shared_across_instances",
		"two servers on one store: A executes and drops the connection, the client fails over to B, which replays A's answer: executed once",
		sql, dedupSharedAcrossInstances)
	add("duplicate_waits_across_instances",
		"a duplicate reaches B while A still executes the original: B waits for A's running record and replays its answer; executed once; the key reused with another body meanwhile is refused at once",
		sql, duplicateWaitsAcrossInstances)
	add("debits_add_up_across_instances",
		"40 keyed debits of one account reach two servers on one store at once, 4 connections to each: the balance and the debit count hold every debit the servers executed",
		sql, debitsAddUpAcrossInstances)
	add("commit_outcome_unknown",
		"the server's COMMIT of a keyed debit is lost, once after PostgreSQL committed it and once before: the server leaves the outcome unknown, sending no answer, and keeps the key claimed, so the retry replays the committed debit or, after the lease, executes the lost one; each executed once",
		[]string{bank.KindPostgres}, commitOutcomeUnknown)
	add("memory_dedup_not_shared",
		"negative control: two servers each with its own in-memory store; the retry that fails over to B executes again",
		[]string{bank.KindMemory}, memoryDedupNotShared)
	add("lease_expiry_takeover",
		"the executor dies holding a running claim; 4 concurrent retries wait out its lease, exactly one takes over and the others get its answer",
		sql, leaseExpiryTakeover)
	add("ttl_expired_key_executes_again",
		"the documented boundary: a key reused after its record's TTL executes again, once swept and also before any sweep",
		sql, ttlExpiredKeyExecutesAgain)
	return out
}
