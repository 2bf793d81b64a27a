package robustness

import "github.com/rpcbench/rpcbench/internal/scenario/scenariotest"

// robustnessMutants are the bugs of issue 26 ("Behaviours no test pins") that
// the robustness and evidence groups' server limits must catch.
var robustnessMutants = []scenariotest.Mutant{
	{
		Name: "conn_share_one_more",
		Bug:  "the per-connection share is checked with > instead of >=: a connection may have -queue-per-conn+1 requests queued or executing",
		File: "internal/server/conn.go",
		Old:  "if c.queued.Load() >= int32(s.cfg.MaxQueuedPerConn) {",
		New:  "if c.queued.Load() > int32(s.cfg.MaxQueuedPerConn) {",
		Catch: map[string]string{
			"backpressure_conn_share": "shareAccepted=5, want 4",
		},
	},
	{
		Name: "conn_share_one_fewer",
		Bug:  "the per-connection share counts the arriving request as well as those it holds: a connection gets only -queue-per-conn-1 requests queued or executing",
		File: "internal/server/conn.go",
		Old:  "if c.queued.Load() >= int32(s.cfg.MaxQueuedPerConn) {",
		New:  "if c.queued.Load()+1 >= int32(s.cfg.MaxQueuedPerConn) {",
		Catch: map[string]string{
			"backpressure_conn_share": "shareAccepted=3, want 4",
		},
	},
	{
		Name: "max_conns_one_more",
		Bug:  "the connection limit is checked with > instead of >=: -max-conns+1 connections are served",
		File: "internal/server/server.go",
		Old:  "if len(s.conns) >= s.cfg.MaxConns {",
		New:  "if len(s.conns) > s.cfg.MaxConns {",
		Catch: map[string]string{
			"hostile_conns_past_limit": "served=9, want 8",
		},
	},
	{
		Name: "max_conns_one_fewer",
		Bug:  "the connection limit counts the connection just accepted among those open: only -max-conns-1 connections are served",
		File: "internal/server/server.go",
		Old:  "if len(s.conns) >= s.cfg.MaxConns {",
		New:  "if len(s.conns)+1 >= s.cfg.MaxConns {",
		Catch: map[string]string{
			"hostile_conns_past_limit": "served=7, want 8",
		},
	},
	{
		Name: "inline_claim_ignores_queue",
		Bug:  "the reader's fast path claims a slot whenever one is free, queued requests or not: a get runs inline ahead of a debit queued before it and not yet taken by a worker",
		File: "internal/server/queue.go",
		Old:  "if q.closed.Load() || q.waiting.Load() > 0 {",
		New:  "if q.closed.Load() {",
		Catch: map[string]string{
			"inline_never_overtakes_queue": "rounds whose get executed before the debit queued ahead of it",
		},
	},
}
