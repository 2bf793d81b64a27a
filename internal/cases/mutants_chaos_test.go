package cases

// chaosMutants are the bugs of issue 26 ("Behaviours no test pins") in
// the chaos checkers, which the chaos group's negative controls must
// catch.
var chaosMutants = []mutant{
	{
		name: "exactly_once_ignores_failed_executed",
		bug:  "the exactly-once checker looks only for keys executed twice and acknowledged keys never executed: a keyed debit answered as failed that the server's log shows executed passes",
		file: "internal/chaos/check.go",
		old:  "\t\tcase op.Outcome == OutcomeFailed && n > 0:\n\t\t\tfailedRan++\n",
		new:  "\t\tcase false:\n\t\t\tfailedRan++\n",
		catch: map[string]string{
			"negative_control_lying_server": "exactly_once=PASS, want FAIL",
		},
	},
}
