package cases

import "github.com/rpcbench/rpcbench/internal/chaos"

// GroupChaos holds fixed-seed chaos runs: a random workload under a
// random fault schedule, checked as a whole history.
const GroupChaos = "chaos"

// chaosGroup lists the chaos group in run order: fixed seeds.
func chaosGroup() []Case {
	mk := func(name, doc string, seed int64, store string, servers int) Case {
		c := Case{Name: name, Group: GroupChaos, Doc: doc, run: func(t *T) { chaosRun(t, seed, store, servers) }}
		if store == chaos.StorePostgres {
			c.Needs = []string{NeedsPostgres}
		}
		return c
	}
	return []Case{
		mk("chaos_seed1_memory", "8 clients for 8s against one in-memory server under every fault but kills; the history is linearizable, exactly-once and never crossed", 1, chaos.StoreMemory, 1),
		mk("chaos_seed2_sqlite", "the same on SQLite with kills and restarts too", 2, chaos.StoreSQLite, 1),
		mk("chaos_seed3_postgres_two_servers", "the same on two servers sharing a PostgreSQL database, the clients failing over between them", 3, chaos.StorePostgres, 2),
		{Name: "negative_control_lying_server", Group: GroupChaos, Doc: "negative control: 3s against a server that, in three spells, executes every debit and answers it UNAVAILABLE; the exactly-once checker flags keyed debits answered as failed that the server's log shows executed", run: negativeControlLyingServer},
	}
}
