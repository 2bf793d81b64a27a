package deploy

import "github.com/rpcbench/rpcbench/internal/scenario/scenariotest"

// deployLBMutants are the load balancing and name resolution bugs of
// issue 23 that the deploy group must catch.
var deployLBMutants = []scenariotest.Mutant{
	{
		Name: "p2c_is_round_robin",
		Bug:  "round robin is used where p2c is asked for: the slow instance gets its third of the calls",
		File: "internal/client/pick.go",
		Old:  "\tcase P2C:\n\t\treturn p2c(cs, idx, next, d)\n",
		New:  "\tcase P2C:\n\t\treturn roundRobin(cs, idx, next, d)\n",
		Catch: map[string]string{
			"lb_avoids_slow_instance": "want at most 0.15: p2c must send the slow instance well under a third",
		},
	},
	{
		Name: "warmup_ignored",
		Bug:  "WarmUp is accepted but never weighs anything: a restarted instance gets its full share at once",
		File: "internal/client/balancer.go",
		Old:  "\t\tc.weight = warmWeight(now.Sub(ep.dialedAt), warmUp)\n",
		New:  "",
		Catch: map[string]string{
			"warmup_ramps_new_instance": "want at most 0.15: a restarted instance must not get its full share at once",
		},
	},
	{
		Name: "resolver_drops_snapshot",
		Bug:  "the resolver drops its snapshot when a resolution fails: during a DNS outage the client has no address to send to",
		File: "internal/client/resolver.go",
		Old:  "\t\tr.failures.Add(1)\n\t\treturn\n",
		New:  "\t\tr.failures.Add(1)\n\t\tr.bal.update(nil)\n\t\treturn\n",
		Catch: map[string]string{
			"dns_outage_keeps_snapshot": "failed=",
		},
	},
}
