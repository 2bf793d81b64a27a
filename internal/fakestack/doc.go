// Package fakestack holds stacks under test that misbehave on purpose:
// client adapters (adapters/PROTOCOL.md) and server adapters
// (adapters/SERVER-PROTOCOL.md), each with one bug, that the grpc
// group's negative controls and the judge's tests run in a stack's
// column to show the judge failing it for that bug. Any binary that
// calls Main first can be one: rpcbench does, and so do the test
// binaries that start them.
package fakestack

import "os"

// Main runs the fake that the environment names (EnvAdapter or
// EnvServer, set by whoever started this process as an adapter) and
// returns its exit code, with ok true; ok is false when the
// environment names none, and the process goes on as itself.
func Main() (code int, ok bool) {
	if mode := os.Getenv(EnvAdapter); mode != "" {
		return adapterMain(mode), true
	}
	if mode := os.Getenv(EnvServer); mode != "" {
		return serverMain(mode), true
	}
	return 0, false
}
