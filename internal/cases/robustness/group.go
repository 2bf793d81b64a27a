package robustness

import "github.com/rpcbench/rpcbench/internal/scenario"

// Group holds the scenarios in which hostile clients and
// overload attack a server while a well-behaved client is served.
const Group = "robustness"

// Cases lists the robustness group in run order.
func Cases() []scenario.Case {
	return []scenario.Case{
		{Name: "hostile_garbage_bytes", Group: Group, Doc: "50 connections send random bytes: each is closed as a protocol error while a polite client is served", Body: hostileGarbageBytes},
		{Name: "hostile_huge_length_prefix", Group: Group, Doc: "a 0x7fffffff length prefix closes its connection without the server's memory growing", Body: hostileHugeLengthPrefix},
		{Name: "hostile_reset_mid_frame", Group: Group, Doc: "half a frame then an RST: the server logs it and reaps the connection, leaking no goroutine", Body: hostileResetMidFrame},
		{Name: "hostile_slow_sender", Group: Group, Doc: "a request sent one byte per 100 ms holds no worker: with one worker, other gets succeed meanwhile", Body: hostileSlowSender},
		{Name: "hostile_idle_connections", Group: Group, Doc: "500 idle connections cost two goroutines each, block no one, and are reaped when closed", Body: hostileIdleConnections},
		{Name: "hostile_connect_churn", Group: Group, Doc: "2000 connections opened and closed or reset at once: the server keeps serving and accepting", Body: hostileConnectChurn},
		{Name: "hostile_never_reads", Group: Group, Doc: "clients that never read their answers are held back by TCP and dropped at the write timeout", Body: hostileNeverReads},
		{Name: "hostile_conns_past_limit", Group: Group, Doc: "with -max-conns 8, exactly 8 connections are served and the 9th is closed on accept; the open ones are still served, 500 more opened in a loop are turned away for a LIMIT line a second, and once one closes a new one is", Body: hostileConnsPastLimit},
		{Name: "backpressure_burst", Group: Group, Doc: "a burst past a queue of 8: each debit is executed or UNAVAILABLE unexecuted, and a retrying client gets each executed once", Body: backpressureBurst},
		{Name: "backpressure_conn_share", Group: Group, Doc: "one connection writes 6 slow debits past -queue-per-conn 4: exactly 4 are taken, executing or queued, and 2 answered UNAVAILABLE unexecuted; a second connection gets its own 4", Body: backpressureConnShare},
		{Name: "inline_never_overtakes_queue", Group: Group, Doc: "with one worker, a get the reader could run itself, written right behind a queued debit, executes after it: 20 rounds, in the server log's order", Body: inlineNeverOvertakesQueue},
	}
}
