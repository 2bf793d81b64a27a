package chaos

import "github.com/rpcbench/rpcbench/internal/scenario/scenariotest"

// chaosMutants are the bugs of issue 26 ("Behaviours no test pins") in
// the chaos checkers, which the chaos group's negative controls must
// catch.
var chaosMutants = []scenariotest.Mutant{
	{
		Name: "exactly_once_ignores_failed_executed",
		Bug:  "the exactly-once checker looks only for keys executed twice and acknowledged keys never executed: a keyed debit answered as failed that the server's log shows executed passes",
		File: "internal/chaos/check.go",
		Old:  "\t\tcase op.Outcome == OutcomeFailed && n > 0:\n\t\t\tfailedRan++\n",
		New:  "\t\tcase false:\n\t\t\tfailedRan++\n",
		Catch: map[string]string{
			"negative_control_lying_server": "exactly_once=PASS, want FAIL",
		},
	},
}
