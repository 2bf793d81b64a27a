// Package cases is the list of scenario groups: Default concatenates
// them in run order, and the Group constants name them.
//
// Each group is a package of its own below this one
// (internal/cases/GROUP): group.go declares the group and lists its
// scenarios in run order (Cases), and its other files hold the scenarios
// by theme, with the helpers only they use. What every scenario stands
// on (Case and T, the registry, servers, raw connections, relays, calls,
// bounds, traces, probes) is package scenario; the grpc group's judge is
// package judge.
package cases
