package cases

import (
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// ioTimeout bounds each read and write of a hostile connection, so that a
// server that fails to react fails the scenario instead of hanging it.
const ioTimeout = 5 * time.Second

// dialRaw opens a plain TCP connection to addr, closed when the scenario
// ends if it is still open then.
func (t *T) dialRaw(addr string) *net.TCPConn {
	nc, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.cleanup(func() { nc.Close() })
	return nc.(*net.TCPConn)
}

// resetConn aborts nc: with SO_LINGER 0, close discards unsent data and
// sends an RST instead of a FIN.
func resetConn(nc *net.TCPConn) error {
	if err := nc.SetLinger(0); err != nil {
		nc.Close()
		return err
	}
	return nc.Close()
}

// isReset reports whether err says the peer aborted the connection.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// writeTimed writes b within ioTimeout.
func writeTimed(nc net.Conn, b []byte) error {
	nc.SetWriteDeadline(time.Now().Add(ioTimeout))
	_, err := nc.Write(b)
	return err
}

// awaitClose reads and discards until the peer closes nc, and returns
// nil if it did so (EOF or reset) within ioTimeout.
func awaitClose(nc net.Conn) error {
	nc.SetReadDeadline(time.Now().Add(ioTimeout))
	_, err := io.Copy(io.Discard, nc)
	if isReset(err) {
		return nil
	}
	return err
}

// requestBytes encodes a request with a 1 s budget.
func (t *T) requestBytes(id uint64, method, payload string) []byte {
	f := proto.Frame{Type: proto.TypeRequest, ID: id, BudgetMs: 1000, Method: method, Payload: []byte(payload)}
	b, err := proto.AppendFrame(nil, &f)
	if err != nil {
		t.Fatalf("encode %s request: %v", method, err)
	}
	return b
}

// encode encodes frames back to back, as one write would carry them.
func (t *T) encode(frames ...proto.Frame) []byte {
	var b []byte
	for i := range frames {
		var err error
		if b, err = proto.AppendFrame(b, &frames[i]); err != nil {
			t.Fatalf("encode %v frame %d: %v", frames[i].Type, frames[i].ID, err)
		}
	}
	return b
}

// readFrame reads from nc until a whole frame has arrived, within
// ioTimeout, and returns the first one.
func readFrame(nc net.Conn) (proto.Frame, error) {
	nc.SetReadDeadline(time.Now().Add(ioTimeout))
	return proto.NewFrameReader(nc, proto.TypeResponse, 4096).ReadFrame()
}
