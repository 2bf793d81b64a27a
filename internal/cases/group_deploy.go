package cases

import "github.com/rpcbench/rpcbench/internal/bank"

// GroupDeploy holds the scenarios of deploys: servers asked to stop while
// calls are in flight, and the clients that must lose none of them.
const GroupDeploy = "deploy"

// deployGroup lists the deploy group in run order.
func deployGroup() []Case {
	d := func(name, doc string, run func(*T)) Case {
		return Case{Name: name, Group: GroupDeploy, Doc: doc, run: run}
	}
	return []Case{
		d("drain_finishes_in_flight",
			"two servers on one SQLite store; A's one worker holds a slow get with 3 keyless debits queued behind it when A drains at the next debit (a drain fault): the get and the queued debits are answered by A, the 3 debits above the drain frame's ID end DRAINED and are re-sent to B, every debit executes once by the servers' logs, none is UNKNOWN",
			func(t *T) { drainFinishesInFlight(t, bank.KindSQLite) }),
		d("drain_deadline_bounds_shutdown",
			"a SIGTERM drain with -drain-timeout 1s while a keyless debit sleeps 30s and a get sleeps 300ms: the get is answered, the drain ends after 0.8s to the timeout plus slack by the server's log, and the debit, only it, is UNKNOWN",
			drainDeadlineBoundsShutdown),
		d("negative_control_kill_instead_of_drain",
			"negative control: drain_finishes_in_flight with SIGKILL instead of the drain; it passes only when the 3 queued keyless debits end UNKNOWN and A's log shows they never ran",
			func(t *T) { negativeControlKillInsteadOfDrain(t, bank.KindSQLite) }),
	}
}
