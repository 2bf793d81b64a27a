package server_test

import (
	"testing"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/server"
	"github.com/rpcbench/rpcbench/internal/servertest"
)

// TestRequestCountsAcrossConns: requests.<method> counts every request
// of every connection, each reader counting in a counter of its own,
// while the connections are open and after they have closed (the counts
// of a reader that ended are folded into the server's).
func TestRequestCountsAcrossConns(t *testing.T) {
	srv, addr := servertest.Start(t, server.DefaultConfig())
	const conns, gets = 5, 7
	var rcs []*servertest.Conn
	for range conns {
		rc := servertest.Dial(t, addr)
		var frames []proto.Frame
		ids := make([]uint64, gets)
		for i := range gets {
			frames = append(frames, servertest.Request(uint64(i+1), bank.MethodGet, "account=a"))
			ids[i] = uint64(i + 1)
		}
		rc.SendBytes(servertest.Encode(t, frames...))
		rc.RecvByID(ids...)
		rcs = append(rcs, rc)
	}
	if got := servertest.Counter(t, srv, "requests.get"); got != conns*gets {
		t.Errorf("open: requests.get = %d, want %d", got, conns*gets)
	}
	for _, rc := range rcs {
		rc.Close()
	}
	servertest.WaitCounter(t, srv, "conns_open", 0)
	if got := servertest.Counter(t, srv, "requests.get"); got != conns*gets {
		t.Errorf("closed: requests.get = %d, want %d", got, conns*gets)
	}
	// Close returns once every reader has ended and folded its counts.
	srv.Close()
	if got := servertest.Counter(t, srv, "requests.get"); got != conns*gets {
		t.Errorf("server closed: requests.get = %d, want %d", got, conns*gets)
	}
}
