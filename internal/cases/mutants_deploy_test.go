package cases

// deployMutants are the bugs of issue 23 ("Deploys without a failed or
// doubled call") that the deploy group must catch, one each.
var deployMutants = []mutant{
	{
		name: "client_drained_is_unknown",
		bug:  "the client treats the attempts above a drain frame's ID as lost connections: their outcome unknown, a keyless debit never re-sent",
		file: "internal/client/client.go",
		old:  "a.Class, a.Outcome, a.Err, a.Cause = ClassNotExecuted, OutcomeDrained, r.err.Error(), r.err",
		new:  "a.Class, a.Outcome, a.Err, a.Cause = ClassUnknown, OutcomeConnLost, r.err.Error(), r.err",
		catch: map[string]string{
			"drain_finishes_in_flight_sqlite": "an attempt above the drain frame's ID was never taken",
		},
	},
	{
		name: "server_takes_past_drain",
		bug:  "the server's drain frame names the request before the last one it took, which it still executes and answers: it executes past its announced last ID",
		file: "internal/server/drain.go",
		old:  "ID: c.lastTaken, Method: proto.DrainMethod",
		new:  "ID: c.lastTaken - 1, Method: proto.DrainMethod",
		catch: map[string]string{
			"drain_finishes_in_flight_sqlite": "executed 1 times on A, 1 on B",
		},
	},
}
