package grpc

import (
	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// ProxyGroup holds the grpc group's scenarios whose fault rpcbench's
// fault proxy can inject, run with the proxy's fault instead of the
// server's: each client stack → proxy → grpc-go's server adapter, with
// no fault of its own, whose exec lines say what executed.
// Each column is judged against the pins of the grpc scenario it
// mirrors, so a stack that shows there what it shows here agrees, and
// any difference is a FAIL naming it.
const ProxyGroup = "proxy"

// ProxyCases is the proxy group's scenarios in their columns.
func ProxyCases() []scenario.Case { return proxySuite().Cases() }

// proxyConfigs are the configurations the proxy group runs: with no
// retry policy, and with one, where the grpc group's findings of
// executions are. retry+key is left out: what makes it run a debit once
// is rpcserver replaying a key it has seen, and grpc-go's server
// adapter, a plain Bank, replays nothing (through the proxy, with it,
// grpc-go, grpc-js and grpcio all execute a keyed debit twice).
var proxyConfigs = map[string]bool{"default": true, "retry": true}

func proxySuite() judge.Suite {
	pins := grpcSuite()
	return judge.Suite{Group: ProxyGroup, Client: proxyScenarios(), NoReference: true, PinSuite: &pins,
		Only: func(_, config string) bool { return proxyConfigs[config] }}
}

// proxyRules are the proxy's rules for the grpc scenarios whose fault
// it can inject, in run order: the grpc scenario, and the rule.
var proxyRules = [][2]string{
	{"grpc_unavailable_before_exec", "kind=unavailable method=Debit count=1"},
	{"grpc_unavailable_after_exec", "kind=unavailable_after method=Debit count=1"},
	{"grpc_close_after_exec", "kind=close method=Debit count=1"},
	{"grpc_refused_stream", "kind=refuse method=Debit count=1"},
	{"grpc_goaway_below", "kind=goaway_below method=Debit count=1"},
	{"grpc_rst_cancel_after_exec", "kind=drop method=Debit count=1"},
	{"grpc_rst_internal_after_exec", "kind=drop code=INTERNAL_ERROR method=Debit count=1"},
	{"grpc_reset_after_exec", "kind=reset method=Debit count=1"},
	{"grpc_goaway_cover", "kind=goaway_cover method=Debit count=1"},
	{"grpc_cut_data_after_exec", "kind=cut_data method=Debit count=1"},
	{"grpc_noreply_within_deadline", "kind=noreply method=Debit count=1"},
	{"grpc_late_answer_not_crossed", "kind=late method=Get count=1 delay=500ms"},
	{"grpc_pushback_honoured", "kind=unavailable method=Debit count=1 retry_after=300ms"},
}

// proxyScenarios are the grpc scenarios of proxyRules, each named
// proxy_ and the rest of its name, with the proxy's rule as its fault.
func proxyScenarios() []judge.Scenario {
	byName := map[string]judge.Scenario{}
	for _, sc := range grpcScenarios() {
		byName[sc.Name] = sc
	}
	var out []judge.Scenario
	for _, r := range proxyRules {
		sc, ok := byName[r[0]]
		if !ok {
			panic("proxy group: no grpc scenario " + r[0])
		}
		sc.Pins, sc.Proxy, sc.Fault = sc.Name, r[1], judge.Fault{}
		sc.Name = "proxy_" + sc.Name[len("grpc_"):]
		sc.Doc = "through rpcbench's fault proxy (" + r[1] + "), no fault at the server: as " + sc.Pins
		out = append(out, sc)
	}
	return out
}
