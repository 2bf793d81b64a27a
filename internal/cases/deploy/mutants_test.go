package deploy

import "github.com/rpcbench/rpcbench/internal/scenario/scenariotest"

// deployMutants are the bugs of issue 23 ("Deploys without a failed or
// doubled call") that the deploy group must catch, one each.
var deployMutants = []scenariotest.Mutant{
	{
		Name: "client_drained_is_unknown",
		Bug:  "the client treats the attempts above a drain frame's ID as lost connections: their outcome unknown, a keyless debit never re-sent",
		File: "internal/client/client.go",
		Old:  "a.Class, a.Outcome, a.Err, a.Cause = ClassNotExecuted, OutcomeDrained, r.err.Error(), r.err",
		New:  "a.Class, a.Outcome, a.Err, a.Cause = ClassUnknown, OutcomeConnLost, r.err.Error(), r.err",
		Catch: map[string]string{
			"drain_finishes_in_flight_sqlite": "an attempt above the drain frame's ID was never taken",
		},
	},
	{
		Name: "server_takes_past_drain",
		Bug:  "the server's drain frame names the request before the last one it took, which it still executes and answers: it executes past its announced last ID",
		File: "internal/server/drain.go",
		Old:  "ID: c.lastTaken, Method: proto.DrainMethod",
		New:  "ID: c.lastTaken - 1, Method: proto.DrainMethod",
		Catch: map[string]string{
			"drain_finishes_in_flight_sqlite": "executed 1 times on A, 1 on B",
		},
	},
}
