package network

import "github.com/rpcbench/rpcbench/internal/scenario/scenariotest"

// networkMutants are the bugs of issue 9 ("Scenarios that catch the bugs
// they exist for") and issue 10 that the network group must catch.
var networkMutants = []scenariotest.Mutant{
	{
		Name: "keepalive_never_declares_dead",
		Bug:  "keepalive pings a silent peer but never gives up on it: the half-open connection is believed alive for ever",
		File: "internal/client/keepalive.go",
		Old:  "\t\t\tc.fail(&ConnLostError{Err: fmt.Errorf(\"%w: nothing read",
		New:  "\t\t\tif ka.Time > 0 {\n\t\t\t\tcontinue\n\t\t\t}\n\t\t\tc.fail(&ConnLostError{Err: fmt.Errorf(\"%w: nothing read",
		Catch: map[string]string{
			"half_open_peer_detected": "declaredDead=false, want true",
		},
	},
	{
		Name: "lost_connection_means_not_sent",
		Bug:  "a connection that dies after the request was written (an RST from a rebooted host) is taken to mean the request never arrived, so a keyless debit is re-sent",
		File: "internal/client/client.go",
		Old:  "\tcase r.err != nil && r.notSent:\n",
		New:  "\tcase r.err != nil:\n",
		Catch: map[string]string{
			"server_host_restart": "debit=OK, want UNKNOWN",
		},
	},
	{
		Name: "keepalive_ignores_acks",
		Bug:  "keepalive goes by reads alone: a live peer whose answer to the ping is queued behind a large request on a slow link is declared dead",
		File: "internal/client/keepalive.go",
		Old:  "canTell && ok && now > acked &&",
		New:  "false && canTell && ok && now > acked &&",
		Catch: map[string]string{
			"slow_link_head_of_line": "keepaliveTimeouts=",
		},
	},
	{
		Name: "user_timeout_not_applied",
		Bug:  "Config.UserTimeout is validated but never set on the socket: a request written into a silent link waits for the call's whole deadline",
		File: "internal/client/client.go",
		Old:  "\tif cfg.UserTimeout > 0 {\n",
		New:  "\tif false && cfg.UserTimeout > 0 {\n",
		Catch: map[string]string{
			"unacked_write_user_timeout": "want at most 2s",
		},
	},
}
