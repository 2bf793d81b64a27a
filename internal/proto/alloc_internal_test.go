package proto

import (
	"io"
	"log"
	"net"
	"testing"
	"time"
)

// BenchmarkServeGet reports the server's own allocations per request:
// executing a get and encoding its answer into the connection's output
// queue, as a reader does for a request it runs itself. Decoding is
// measured by BenchmarkDecoder.
func BenchmarkServeGet(b *testing.B) {
	s, err := NewServer(DefaultServerConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.log = log.New(io.Discard, "", 0)
	nc, peer := net.Pipe()
	defer nc.Close()
	defer peer.Close()
	c := newServerConn(s, nc)
	j := job{c: c, f: Frame{Type: TypeRequest, ID: 1, BudgetMs: 1 << 30, Method: MethodGet, Payload: []byte("account=acct-17")}, arrival: time.Now(), byReader: true}
	var scratch []byte
	b.ReportAllocs()
	for b.Loop() {
		scratch = s.serve(j, scratch[:0])
		c.mu.Lock()
		c.out, c.outFrames = c.out[:0], 0
		c.mu.Unlock()
	}
	if c.unsignal != true {
		b.Fatal("the answer was not queued")
	}
}
