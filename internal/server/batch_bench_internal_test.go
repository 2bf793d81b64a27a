package server

import (
	"net"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// discardConn is a net.Conn whose writes succeed at once, for measuring
// what the server does around its syscalls.
type discardConn struct{ net.Conn }

func (discardConn) Write(b []byte) (int, error)      { return len(b), nil }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }
func (discardConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (discardConn) Close() error                     { return nil }
func (discardConn) SetDeadline(time.Time) error      { return nil }
func (discardConn) SetReadDeadline(time.Time) error  { return nil }
func (discardConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }

// BenchmarkReaderBatch measures the reader's work per request, syscalls
// aside: decoding a batch of 36 gets (what one read brings at G=64),
// taking and running each on the reader, encoding the answers and
// flushing them in one write. ns/op is per request.
func BenchmarkReaderBatch(b *testing.B) {
	s, err := New(DefaultConfig(), getHandler{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := newConn(s, discardConn{})
	const batch = 36
	var wire []byte
	for i := range batch {
		f := proto.Frame{Type: proto.TypeRequest, ID: uint64(i + 1), BudgetMs: 5000, Method: "get", Payload: []byte("account=acct-17")}
		wire, _ = proto.AppendFrame(wire, &f)
	}
	var dec proto.Decoder
	var frames []proto.Frame
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		frames, err = dec.FeedAppend(frames[:0], wire)
		if err != nil || len(frames) != batch {
			b.Fatalf("decoded %d frames, %v", len(frames), err)
		}
		c.takeAll(frames, time.Now())
		if !c.flushHeld() {
			b.Fatal("flush failed")
		}
	}
}

// BenchmarkReaderBatchParallel is BenchmarkReaderBatch on one
// connection per goroutine, all of one server, as the 64-connection row
// runs them: what the readers share (counters, the queue's slots, the
// handler's state) is touched from every core at once.
func BenchmarkReaderBatchParallel(b *testing.B) {
	s, err := New(DefaultConfig(), getHandler{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const batch = 36
	var wire []byte
	for i := range batch {
		f := proto.Frame{Type: proto.TypeRequest, ID: uint64(i + 1), BudgetMs: 5000, Method: "get", Payload: []byte("account=acct-17")}
		wire, _ = proto.AppendFrame(wire, &f)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := newConn(s, discardConn{})
		var dec proto.Decoder
		var frames []proto.Frame
		for {
			var err error
			frames, err = dec.FeedAppend(frames[:0], wire)
			if err != nil || len(frames) != batch {
				b.Errorf("decoded %d frames, %v", len(frames), err)
				return
			}
			c.takeAll(frames, time.Now())
			if !c.flushHeld() {
				b.Error("flush failed")
				return
			}
			for range batch {
				if !pb.Next() {
					return
				}
			}
		}
	})
}
