package deploy

import (
	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// Group holds the scenarios of deploys: servers asked to stop while
// calls are in flight, and the clients that must lose none of them.
const Group = "deploy"

// Cases lists the deploy group in run order.
func Cases() []scenario.Case {
	var out []scenario.Case
	d := func(name, doc string, run func(*scenario.T)) {
		out = append(out, scenario.Case{Name: name, Group: Group, Doc: doc, Body: run})
	}
	// onSQL adds a scenario once per durable store, where the store is
	// what carries the re-sent debits' effects from one server to the
	// other.
	onSQL := func(name, doc string, run func(*scenario.T, string)) {
		for _, k := range []string{bank.KindSQLite, bank.KindPostgres} {
			c := scenario.Case{Name: name + "_" + k, Group: Group, Doc: doc + " (" + k + ")", Body: func(t *scenario.T) { run(t, k) }}
			if k == bank.KindPostgres {
				c.Needs = []string{scenario.NeedsPostgres}
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
	onSQL("rolling_restart_zero_failures",
		"three servers on one store behind DNS (SRV records on a DNS server of the test's), each in turn taken out of DNS, drained by SIGTERM, started again on its address and put back, while 8 callers make gets, keyless debits and keyed debits (each debit 100ms long) through a p2c client: no call fails, no keyless debit is UNKNOWN, no key executes twice, and every balance is its start less the debits answered OK, which are the debits the logs show executed",
		rollingRestartZeroFailures)
	onSQL("negative_control_kill_without_drain",
		"negative control: the same restart with SIGKILL and no notice (nothing takes the server out of DNS first): it passes only when keyless debits in flight end UNKNOWN, their fate unknown to the client",
		negativeControlKillWithoutDrain)
	return append(out, deployLBScenarios()...)
}
