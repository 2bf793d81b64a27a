package cut

import (
	"encoding/json"
	"slices"
)

// GRPCConfig is one configuration a gRPC stack is judged in: what every
// call's channel carries, and whether the harness keys its debits. The
// adapter knows nothing of these names; it honours what the channel
// says. Package configs reads them from files, the built-in ones and a
// user's alike.
type GRPCConfig struct {
	// Name is the configuration's column in evidence and scorecard.
	Name string
	// Doc says what it is, in a sentence.
	Doc string
	// Source is the file it was read from, for messages.
	Source string
	// ServiceConfig is the channel's service config (gRFC A2); nil for
	// none.
	ServiceConfig json.RawMessage
	// Keepalive is the channel's client keepalive; nil for none.
	Keepalive *Keepalive
	// WaitForReady makes every call wait for the channel to be ready.
	WaitForReady bool
	// Key says the harness sends an idempotency-key with each debit.
	Key bool
	// Needs are the capabilities a stack must have for the
	// configuration to mean what its name says; in a stack without one,
	// its cells are unsupported.
	Needs []string
	// Runs are the kinds of scenario it runs (RunPlain, ...).
	Runs []string
}

// The kinds of scenario a configuration runs, by what it configures.
const (
	// RunPlain: every scenario that needs no keepalive, hedging or
	// per-attempt timeout of its configuration.
	RunPlain = "plain"
	// RunRetry: the scenarios that judge what a retry policy does with
	// what the server said (malformed pushback), which mean nothing
	// without one.
	RunRetry = "retry"
	// RunHedge: the hedging scenarios.
	RunHedge = "hedge"
	// RunPerAttempt: the scenarios of a per-attempt receive timeout.
	RunPerAttempt = "per-attempt"
	// RunKeepalive: the scenarios that silence a connection, which wait
	// on the stack's keepalive.
	RunKeepalive = "keepalive"
)

// Runs are the kinds of scenario a configuration may run, in order.
var Runs = []string{RunPlain, RunRetry, RunHedge, RunPerAttempt, RunKeepalive}

// Adjust returns g as stack s, with capabilities caps, is configured in
// it: a keepalive configuration permits pings without a stream for a
// stack whose pings always go, and a configuration that needs neither a
// retry policy nor hedging carries no service config for a stack
// without a retry policy (the built-in keepalive configuration's retry
// policy is there for the stacks that have one). Other configurations
// are as they are: a stack lacking what they need does not run them.
func (g GRPCConfig) Adjust(s Stack, caps Capabilities) GRPCConfig {
	if g.Keepalive != nil {
		k := *g.Keepalive
		k.PermitWithoutStream = k.PermitWithoutStream || s.PingsAlways
		g.Keepalive = &k
	}
	if !caps.RetryPolicy && !slices.Contains(g.Needs, CapRetryPolicy) && !slices.Contains(g.Needs, CapHedging) {
		g.ServiceConfig = nil
	}
	return g
}

// Channel returns a channel in this configuration.
func (g GRPCConfig) Channel(id, target string) Channel {
	return Channel{ID: id, Target: target, ServiceConfig: g.ServiceConfig, Keepalive: g.Keepalive}
}
