package cut

import (
	"embed"
	"encoding/json"
	"time"
)

// GRPCConfig is one configuration a gRPC stack is judged in: what every
// call's channel carries, and whether the harness keys its debits. The
// adapter knows nothing of these names; it honours what the channel
// says.
type GRPCConfig struct {
	// Name is the configuration's column in evidence and scorecard.
	Name string
	// ServiceConfig is the channel's service config (gRFC A2), from
	// grpcconfig/*.json; nil for none.
	ServiceConfig json.RawMessage
	// Keepalive is the channel's client keepalive; nil for none.
	Keepalive *Keepalive
	// Key says the harness sends an idempotency-key with each debit.
	Key bool
	// Needs are the capabilities a stack must have for the
	// configuration to mean what its name says; in a stack without one,
	// its cells are unsupported.
	Needs []string
}

// The service configs, as files so that the grpc-go adapter's tests
// (another module) check that grpc-go accepts exactly these bytes.
//
//go:embed grpcconfig/*.json
var grpcConfigFiles embed.FS

func grpcServiceConfig(file string) json.RawMessage {
	b, err := grpcConfigFiles.ReadFile("grpcconfig/" + file)
	if err != nil {
		panic(err) // the embed pattern guarantees the files
	}
	return b
}

// GRPCConfigs returns the configurations, in scorecard order:
//   - default: no service config, so only transparent retries;
//   - retry: a retryPolicy for UNAVAILABLE, 4 attempts, backoff 20ms to
//     200ms ×2 (rpcbench's own client's defaults, so the reference
//     column compares);
//   - retry+key: the same, each debit with an idempotency key;
//   - throttled: the same policy under retryThrottling 10 tokens, ratio
//     0.1;
//   - hedged: a hedgingPolicy of 3 attempts 100ms apart for the whole
//     service, the debit included, for the hedging scenarios;
//   - per-attempt: the retry policy with a 200ms perAttemptRecvTimeout:
//     an attempt unanswered by then is abandoned and retried;
//   - keepalive: the retry policy with pings after 10s idle (grpc-go's
//     floor), 1s for the ACK, for the scenarios that silence a
//     connection. For a stack without a retry policy, Adjust drops it.
func GRPCConfigs() []GRPCConfig {
	retry := grpcServiceConfig("retry.json")
	return []GRPCConfig{
		{Name: "default"},
		{Name: "retry", ServiceConfig: retry, Needs: []string{CapRetryPolicy}},
		{Name: "retry+key", ServiceConfig: retry, Key: true, Needs: []string{CapRetryPolicy}},
		{Name: "throttled", ServiceConfig: grpcServiceConfig("throttled.json"), Needs: []string{CapRetryPolicy, CapThrottling}},
		{Name: "hedged", ServiceConfig: grpcServiceConfig("hedged.json"), Needs: []string{CapHedging}},
		{Name: "per-attempt", ServiceConfig: grpcServiceConfig("per-attempt.json"), Needs: []string{CapRetryPolicy, CapPerAttempt}},
		{Name: "keepalive", ServiceConfig: retry, Keepalive: &Keepalive{Time: 10 * time.Second, Timeout: time.Second}, Needs: []string{CapKeepalive}},
	}
}

// Adjust returns g as stack s, with capabilities caps, is configured in
// it: a keepalive configuration permits pings without a stream for a
// stack whose pings always go, and carries no retry policy for a stack
// without one. Other configurations are as they are: a stack lacking
// what they need does not run them.
func (g GRPCConfig) Adjust(s Stack, caps Capabilities) GRPCConfig {
	if g.Keepalive == nil {
		return g
	}
	k := *g.Keepalive
	k.PermitWithoutStream = k.PermitWithoutStream || s.PingsAlways
	g.Keepalive = &k
	if !caps.RetryPolicy {
		g.ServiceConfig = nil
	}
	return g
}

// Channel returns a channel in this configuration.
func (g GRPCConfig) Channel(id, target string) Channel {
	return Channel{ID: id, Target: target, ServiceConfig: g.ServiceConfig, Keepalive: g.Keepalive}
}
