package hostile

import "github.com/rpcbench/rpcbench/internal/scenario"

// Group holds the scenarios in which hostile peers attack rpcserver's
// gRPC side, and both of its wires with slow and idle connections,
// while a well-behaved client is served.
const Group = "hostile"

// Cases lists the hostile group in run order.
func Cases() []scenario.Case {
	return []scenario.Case{
		{Name: "hostile_grpc_zero_window", Group: Group, Doc: "56 gRPC connections that grant no window hold echoes' answers: -grpc-max-streams, -max-out-bytes and -max-out-total refuse exactly the streams past them REFUSED_STREAM, and the server's memory stays bounded", Body: hostileGRPCZeroWindow},
		{Name: "hostile_grpc_conns_past_limit", Group: Group, Doc: "with -max-conns 8, exactly 8 gRPC connections are served and the 9th is closed on accept, counted and logged LIMIT; once one closes a new one is served", Body: hostileGRPCConnsPastLimit},
		{Name: "hostile_grpc_continuation_flood", Group: Group, Doc: "HEADERS without END_HEADERS, then empty CONTINUATION frames without end: the connection is closed within a second with GOAWAY(ENHANCE_YOUR_CALM)", Body: hostileGRPCContinuationFlood},
		{Name: "hostile_grpc_rapid_reset", Group: Group, Doc: "streams opened and reset at once, as fast as the connection takes them: closed with GOAWAY(ENHANCE_YOUR_CALM), its log lines within a bound, no ATTEMPT event dropped", Body: hostileGRPCRapidReset},
		{Name: "hostile_grpc_never_reads", Group: Group, Doc: "PINGs and SETTINGS flooded by peers that never read the acknowledgements: each is closed by the flood verdict within 12s of its start, long before -write-timeout 40s, unless TCP stalled it first", Body: hostileGRPCNeverReads},
		{Name: "hostile_slowloris", Group: Group, Doc: "-max-conns filled on both wires by connections that trickle a frame, a preface or a header block: each is closed by -read-timeout, no sooner, logged READ_TIMEOUT, and new clients are served", Body: hostileSlowloris},
		{Name: "hostile_idle_keepalive", Group: Group, Doc: "1500 rpcbench and 200 gRPC connections idle for six intervals of -keepalive 1s, with -write-timeout below it: none is dropped, and each then answers a get", Body: hostileIdleKeepalive},
	}
}
