// Package scenario is the engine the scenario groups stand on: Case and
// T, the Registry, starting servers, raw connections, relays, calls and
// their fields, bounds, client traces, and the memory and goroutine
// probes the robustness scenarios share.
//
// It imports no group: a group package (internal/cases/GROUP) lists its
// scenarios as Cases whose Body drives a T, and internal/cases
// concatenates the groups.
package scenario
