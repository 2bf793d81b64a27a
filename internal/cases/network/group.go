package network

import "github.com/rpcbench/rpcbench/internal/scenario"

// Group holds the scenarios that run client and server on
// test hosts in network namespaces (package nethost), so that links
// can drop, delay or black-hole packets; each has Needs NeedsNetwork.
const Group = "network"

// Cases lists the network group in run order.
func Cases() []scenario.Case {
	cs := []scenario.Case{
		{Name: "half_open_peer_detected", Doc: "the server host's link goes silent: a keyless debit in flight ends UNKNOWN at its 2 s deadline (it did execute), keepalive (3 s + 0.5 s) declares the idle connection dead within Time+Timeout of its last read, and a new connection serves once the link is back", Body: halfOpenPeerDetected},
		{Name: "negative_control_no_keepalive", Doc: "negative control: without keepalive the client still believes in the connection to a silent host after keepalive's Time+Timeout and more", Body: negativeControlNoKeepalive},
		{Name: "partition_then_heal_keyed_debit", Doc: "a keyed debit executes and its answer is lost in a partition; retries with the same key are replayed once the link heals: executed once", Body: partitionThenHealKeyedDebit},
		{Name: "server_host_restart", Doc: "the server host reboots while its link is down: the client's old connection is answered with an RST, the get is retried on a new connection, the keyless debit in flight is UNKNOWN, no answer crosses callers", Body: serverHostRestart},
		{Name: "unacked_write_user_timeout", Doc: "a keyless debit written into a silent link: with UserTimeout 500ms the kernel gives up on it and the call ends UNKNOWN in about half a second, not at its 8 s deadline; the request, held in the kernel's neighbour queue, still reaches the server when the link returns and executes, once", Body: unackedWriteUserTimeout},
		{Name: "slow_link_head_of_line", Doc: "on a 125 kbit/s link a 60 KB request delays a small call behind it on its connection until it has crossed, while a small call on a second connection overtakes it; keepalive, its ping stuck behind the request, keeps the connection", Body: slowLinkHeadOfLine},
	}
	for i := range cs {
		cs[i].Group, cs[i].Needs = Group, []string{scenario.NeedsNetwork}
	}
	return cs
}
