package main

import (
	"os"
	"testing"

	"github.com/rpcbench/rpcbench/adapters/gokit/clientkit"
	"github.com/rpcbench/rpcbench/adapters/gokit/serverkit"
	"github.com/rpcbench/rpcbench/adapters/gokit/serverkit/serverkittest"
)

// TestMain lets TestServeProcess run this test binary as the adapter.
func TestMain(m *testing.M) { os.Exit(serverkittest.Main(m, main)) }

// TestServe: grpc-go's server under serverkit's handlers does what
// SERVER-PROTOCOL.md says, called by grpc-go's own client.
func TestServe(t *testing.T) {
	serverkittest.Suite(t, serverStack, serverkittest.GRPCDial)
}

// TestServeProcess: main dispatches "serve" to the server adapter, with
// the protocol's exit statuses.
func TestServeProcess(t *testing.T) { serverkittest.ProcessSuite(t, serverkittest.Self) }

// TestStatusCodes: every code a handler returns has grpc-go's own.
func TestStatusCodes(t *testing.T) {
	for _, c := range serverkit.StatusCodes {
		if g, ok := grpcCodes[c]; !ok || clientkit.CodeName(uint32(g)) != string(c) {
			t.Errorf("%s: got grpc-go code %v (%v), want the one named %s", c, g, ok, c)
		}
	}
}
