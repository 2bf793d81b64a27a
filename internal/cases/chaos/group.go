package chaos

import (
	"github.com/rpcbench/rpcbench/internal/chaos"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// Group holds fixed-seed chaos runs: a random workload under a
// random fault schedule, checked as a whole history.
const Group = "chaos"

// Cases lists the chaos group in run order: fixed seeds. They run beside
// each other (PoolCounts): what they check is the history as a whole,
// which no load can make right or wrong (the faults already make it
// adversarial), and each runs its own servers on its own addresses and
// stores.
func Cases() []scenario.Case {
	mk := func(name, doc string, seed int64, store string, servers int) scenario.Case {
		c := scenario.Case{Name: name, Group: Group, Doc: doc, Pool: scenario.PoolCounts, Body: func(t *scenario.T) { chaosRun(t, seed, store, servers) }}
		if store == chaos.StorePostgres {
			c.Needs = []string{scenario.NeedsPostgres}
		}
		return c
	}
	return []scenario.Case{
		mk("chaos_seed1_memory", "8 clients for 8s against one in-memory server under every fault but kills; the history is linearizable, exactly-once and never crossed", 1, chaos.StoreMemory, 1),
		mk("chaos_seed2_sqlite", "the same on SQLite with kills and restarts too", 2, chaos.StoreSQLite, 1),
		mk("chaos_seed3_postgres_two_servers", "the same on two servers sharing a PostgreSQL database, the clients failing over between them", 3, chaos.StorePostgres, 2),
		{Name: "negative_control_lying_server", Group: Group, Doc: "negative control: 3s against a server that, in three spells, executes every debit and answers it UNAVAILABLE; the exactly-once checker flags keyed debits answered as failed that the server's log shows executed", Pool: scenario.PoolCounts, Body: negativeControlLyingServer},
	}
}
