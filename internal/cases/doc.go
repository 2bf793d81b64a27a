// Package cases holds the named scenarios. Each one starts its own
// rpcserver process, drives it through the client with faults switched on,
// checks its invariants and reports one CASE line.
//
// The files are of three kinds:
//
//   - group_NAME.go declares a group and lists its scenarios in run order,
//     and nothing else; Default concatenates the groups.
//   - harness_*.go is what scenarios stand on: Case and T, the registry,
//     starting servers, raw connections, relays, calls and their fields,
//     bounds, client traces, and (harness_robustness.go) the memory and
//     goroutine probes the robustness scenarios share.
//   - every other file holds scenarios by theme (framing.go, retry.go,
//     durability.go, network.go, ...), with the helpers only they use,
//     and negative.go the deliberately wrong clients of the negative
//     controls.
package cases
