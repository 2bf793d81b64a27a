package cases

import (
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
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

// rawConn is a plain TCP connection whose answers are read by one
// FrameReader, so that answers arriving in one read are all kept.
type rawConn struct {
	nc *net.TCPConn
	fr *proto.FrameReader
}

// dialFrames opens a rawConn to addr, closed when the scenario ends.
func (t *T) dialFrames(addr string) *rawConn {
	nc := t.dialRaw(addr)
	return &rawConn{nc: nc, fr: proto.NewFrameReader(nc, proto.TypeResponse, 0)}
}

// send encodes frames and writes them in one write, within ioTimeout,
// so that the server's reader takes them in one batch.
func (rc *rawConn) send(t *T, frames ...proto.Frame) {
	if err := writeTimed(rc.nc, t.encode(frames...)); err != nil {
		t.Fatalf("write to %s: %v", rc.local(), err)
	}
}

// read returns the next answer, waiting at most ioTimeout for it.
func (rc *rawConn) read() (proto.Frame, error) {
	rc.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	return rc.fr.ReadFrame()
}

// readN returns the next n answers by request ID, and fails the scenario
// if one does not come or an ID comes twice.
func (rc *rawConn) readN(t *T, n int) map[uint64]proto.Frame {
	got := make(map[uint64]proto.Frame, n)
	for len(got) < n {
		f, err := rc.read()
		if err != nil {
			t.Fatalf("connection %s: %d of %d answers, then %v", rc.local(), len(got), n, err)
		}
		if _, dup := got[f.ID]; dup {
			t.Fatalf("connection %s: request %d answered twice", rc.local(), f.ID)
		}
		got[f.ID] = f
	}
	return got
}

// local is the connection's own address: the remote the server logs
// for it.
func (rc *rawConn) local() string { return rc.nc.LocalAddr().String() }

// connNumber returns the server's number for the connection whose remote
// address is remote, from its CONN_OPEN event; it fails the scenario if
// the log has none.
func (t *T) connNumber(evs []serverapi.Event, remote string) int64 {
	for _, e := range evs {
		if e.Name == serverapi.EventConnOpen && e.Text(serverapi.KeyRemote) == remote {
			if n, ok := e.Int(serverapi.KeyConn); ok {
				return n
			}
		}
	}
	t.Fatalf("server log has no %s event for %s", serverapi.EventConnOpen, remote)
	return 0
}

// statusOffset is where a frame's status byte sits in its encoding: after
// the 4-byte length prefix, magic (2), version, type, ID (8) and budget
// (4); see SPEC.md, "Frames".
const statusOffset = 4 + 2 + 1 + 1 + 8 + 4

// withStatus encodes the request f with st in its status field, which
// the encoder refuses to do for a request: SPEC.md requires 0 there.
func (t *T) withStatus(f proto.Frame, st proto.Status) []byte {
	b := t.encode(f)
	b[statusOffset] = byte(st)
	return b
}
