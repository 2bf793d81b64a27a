package cut

import (
	"encoding/json"
	"testing"
)

// TestGRPCConfigs: names are unique, each service config is a JSON
// object naming the bank service, and durations are strings ending in
// "s" (grpc-go rejects "100ms"; its tests in adapters/grpcgo check that
// it accepts these).
func TestGRPCConfigs(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range GRPCConfigs() {
		if seen[g.Name] {
			t.Errorf("config %q twice", g.Name)
		}
		seen[g.Name] = true
		if g.ServiceConfig == nil {
			continue
		}
		var sc struct {
			MethodConfig []struct {
				Name        []map[string]string
				RetryPolicy struct {
					MaxAttempts                int
					InitialBackoff, MaxBackoff string
					PerAttemptRecvTimeout      string
				}
				HedgingPolicy *struct {
					MaxAttempts  int
					HedgingDelay string
				}
			}
		}
		if err := json.Unmarshal(g.ServiceConfig, &sc); err != nil {
			t.Fatalf("%s: %v", g.Name, err)
		}
		if len(sc.MethodConfig) != 1 || sc.MethodConfig[0].Name[0]["service"] != "rpcbench.bank.v1.Bank" {
			t.Errorf("%s: method config %+v, want one for rpcbench.bank.v1.Bank", g.Name, sc.MethodConfig)
			continue
		}
		if hp := sc.MethodConfig[0].HedgingPolicy; hp != nil {
			if hp.MaxAttempts != 3 || hp.HedgingDelay != "0.1s" || g.Name != "hedged" {
				t.Errorf("%s: hedging policy %+v", g.Name, *hp)
			}
			continue
		}
		rp := sc.MethodConfig[0].RetryPolicy
		if rp.MaxAttempts != 4 || rp.InitialBackoff != "0.02s" || rp.MaxBackoff != "0.2s" {
			t.Errorf("%s: retry policy %+v", g.Name, rp)
		}
		if (rp.PerAttemptRecvTimeout != "") != (g.Name == "per-attempt") || g.Name == "per-attempt" && rp.PerAttemptRecvTimeout != "0.2s" {
			t.Errorf("%s: perAttemptRecvTimeout %q, want 0.2s in per-attempt alone", g.Name, rp.PerAttemptRecvTimeout)
		}
		if _, err := encodeCall(1, Call{Channel: g.Channel("c", "127.0.0.1:1"), Method: "m", Request: []byte(`{}`), Deadline: 1}); err != nil {
			t.Errorf("%s: %v", g.Name, err)
		}
	}
	for _, name := range []string{"default", "retry", "retry+key", "throttled", "hedged", "per-attempt", "keepalive"} {
		if !seen[name] {
			t.Errorf("no config %q", name)
		}
	}
}

// TestAdjust: a keepalive configuration permits pings without a stream
// in a stack whose pings always go, and drops its retry policy in a
// stack without one; other configurations are left as they are.
func TestAdjust(t *testing.T) {
	var ka, retry GRPCConfig
	for _, g := range GRPCConfigs() {
		switch g.Name {
		case "keepalive":
			ka = g
		case "retry":
			retry = g
		}
	}
	always := Stack{Name: "s", PingsAlways: true}
	got := ka.Adjust(always, Capabilities{Keepalive: true})
	if !got.Keepalive.PermitWithoutStream || got.ServiceConfig != nil {
		t.Errorf("keepalive in a stack pinging always, without retries: %+v, %s", *got.Keepalive, got.ServiceConfig)
	}
	if ka.Keepalive.PermitWithoutStream {
		t.Errorf("Adjust changed the configuration it was given")
	}
	got = ka.Adjust(Stack{Name: "t"}, Capabilities{Keepalive: true, RetryPolicy: true})
	if got.Keepalive.PermitWithoutStream || string(got.ServiceConfig) != string(ka.ServiceConfig) {
		t.Errorf("keepalive in a stack with retries: %+v, %s", *got.Keepalive, got.ServiceConfig)
	}
	if got := retry.Adjust(always, Capabilities{}); string(got.ServiceConfig) != string(retry.ServiceConfig) {
		t.Errorf("Adjust changed the retry configuration: %s", got.ServiceConfig)
	}
}
