package cases

// deployLBMutants are the load balancing and name resolution bugs of
// issue 23 that the deploy group must catch.
var deployLBMutants = []mutant{
	{
		name: "p2c_is_round_robin",
		bug:  "round robin is used where p2c is asked for: the slow instance gets its third of the calls",
		file: "internal/client/pick.go",
		old:  "\tcase P2C:\n\t\treturn p2c(cs, idx, next, d)\n",
		new:  "\tcase P2C:\n\t\treturn roundRobin(cs, idx, next, d)\n",
		catch: map[string]string{
			"lb_avoids_slow_instance": "want at most 0.15: p2c must send the slow instance well under a third",
		},
	},
	{
		name: "warmup_ignored",
		bug:  "WarmUp is accepted but never weighs anything: a restarted instance gets its full share at once",
		file: "internal/client/balancer.go",
		old:  "\t\tc.weight = warmWeight(now.Sub(ep.dialedAt), warmUp)\n",
		new:  "",
		catch: map[string]string{
			"warmup_ramps_new_instance": "want at most 0.15: a restarted instance must not get its full share at once",
		},
	},
	{
		name: "resolver_drops_snapshot",
		bug:  "the resolver drops its snapshot when a resolution fails: during a DNS outage the client has no address to send to",
		file: "internal/client/resolver.go",
		old:  "\t\tr.failures.Add(1)\n\t\treturn\n",
		new:  "\t\tr.failures.Add(1)\n\t\tr.bal.update(nil)\n\t\treturn\n",
		catch: map[string]string{
			"dns_outage_keeps_snapshot": "failed=",
		},
	},
}
