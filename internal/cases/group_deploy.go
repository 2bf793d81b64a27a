package cases

import "github.com/rpcbench/rpcbench/internal/bank"

// GroupDeploy holds the scenarios of deploys: servers asked to stop while
// calls are in flight, and the clients that must lose none of them.
const GroupDeploy = "deploy"

// deployGroup lists the deploy group in run order.
func deployGroup() []Case {
	var out []Case
	d := func(name, doc string, run func(*T)) {
		out = append(out, Case{Name: name, Group: GroupDeploy, Doc: doc, run: run})
	}
	// onSQL adds a scenario once per durable store, where the store is
	// what carries the re-sent debits' effects from one server to the
	// other.
	onSQL := func(name, doc string, run func(*T, string)) {
		for _, k := range []string{bank.KindSQLite, bank.KindPostgres} {
			c := Case{Name: name + "_" + k, Group: GroupDeploy, Doc: doc + " (" + k + ")", run: func(t *T) { run(t, k) }}
			if k == bank.KindPostgres {
				c.Needs = NeedsPostgres
			}
			out = append(out, c)
		}
	}
	onSQL("drain_finishes_in_flight",
		"two servers on one store; A's one worker holds a slow get with 3 keyless debits queued behind it when A drains at the next debit (a drain fault): the get and the queued debits are answered by A, the 3 debits above the drain frame's ID end DRAINED and are re-sent to B, every debit executes once by the servers' logs, none is UNKNOWN",
		drainFinishesInFlight)
	d("drain_deadline_bounds_shutdown",
		"a SIGTERM drain with -drain-timeout 1s while a keyless debit sleeps 30s and a get sleeps 300ms: the get is answered, the drain ends after 0.8s to the timeout plus slack by the server's log, and the debit, only it, is UNKNOWN",
		drainDeadlineBoundsShutdown)
	onSQL("negative_control_kill_instead_of_drain",
		"negative control: drain_finishes_in_flight with SIGKILL instead of the drain; it passes only when the 3 queued keyless debits end UNKNOWN and A's log shows they never ran",
		negativeControlKillInsteadOfDrain)
	return append(out, deployLBScenarios()...)
}
