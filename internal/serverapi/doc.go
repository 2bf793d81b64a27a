// Package serverapi is the contract between rpcserver and the programs that
// drive it: the announce line, the flag names, the control methods, the
// counters and the log events, each spelled once and decoded into typed
// values on the reading side.
package serverapi
