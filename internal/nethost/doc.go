// Package nethost makes test hosts: network namespaces, each joined to
// this process's namespace by a veth pair, so that traffic to them crosses
// a real link with a kernel network stack at each end.
//
// A host is a namespace named rpcbench-<pid>-<n>, where pid is the
// process that made it. Its end of the pair, eth0, has the address .2 of a
// private /30 taken from 198.18.0.0/15 (RFC 2544's range for benchmark
// tests); this namespace's end, rb<pid>-<n>, has .1. Nothing routes
// anywhere else: traffic goes only to loopback and to these addresses.
//
// A link set down inside the host drops packets silently, without a FIN or
// an RST, as a peer that lost power does: this namespace's end stays up
// with no carrier and keeps its route. Restart removes the namespace,
// taking its sockets with it, and makes it again with the same addresses,
// as a host that rebooted. Shape adds a token-bucket rate limit (tc tbf).
//
// Making hosts needs root and iproute2 (see Available). Close removes what
// a host made; New first removes hosts left by processes that no longer
// exist, so a killed run's hosts do not outlive the next run's start.
//
// Environment:
//
//	RPCBENCH_REQUIRE_NETNS  "1" makes missing prerequisites a failure
//	                        rather than a skip; see Required.
package nethost
