package scenario

import (
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// IOTimeout bounds each read and write of a hostile connection, so that a
// server that fails to react fails the scenario instead of hanging it.
const IOTimeout = 5 * time.Second

// DialRaw opens a plain TCP connection to addr, closed when the scenario
// ends if it is still open then.
func (t *T) DialRaw(addr string) *net.TCPConn {
	nc, err := net.DialTimeout("tcp", addr, IOTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc.(*net.TCPConn)
}

// ResetConn aborts nc: with SO_LINGER 0, close discards unsent data and
// sends an RST instead of a FIN.
func ResetConn(nc *net.TCPConn) error {
	if err := nc.SetLinger(0); err != nil {
		nc.Close()
		return err
	}
	return nc.Close()
}

// IsReset reports whether err says the peer aborted the connection.
func IsReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// WriteTimed writes b within IOTimeout.
func WriteTimed(nc net.Conn, b []byte) error {
	nc.SetWriteDeadline(time.Now().Add(IOTimeout))
	_, err := nc.Write(b)
	return err
}

// AwaitClose reads and discards until the peer closes nc, and returns
// nil if it did so (EOF or reset) within IOTimeout.
func AwaitClose(nc net.Conn) error {
	nc.SetReadDeadline(time.Now().Add(IOTimeout))
	_, err := io.Copy(io.Discard, nc)
	if IsReset(err) {
		return nil
	}
	return err
}

// RequestBytes encodes a request with a 1 s budget.
func (t *T) RequestBytes(id uint64, method, payload string) []byte {
	f := proto.Frame{Type: proto.TypeRequest, ID: id, BudgetMs: 1000, Method: method, Payload: []byte(payload)}
	b, err := proto.AppendFrame(nil, &f)
	if err != nil {
		t.Fatalf("encode %s request: %v", method, err)
	}
	return b
}

// Encode encodes frames back to back, as one write would carry them.
func (t *T) Encode(frames ...proto.Frame) []byte {
	var b []byte
	for i := range frames {
		var err error
		if b, err = proto.AppendFrame(b, &frames[i]); err != nil {
			t.Fatalf("encode %v frame %d: %v", frames[i].Type, frames[i].ID, err)
		}
	}
	return b
}

// ReadFrame reads from nc until a whole frame has arrived, within
// IOTimeout, and returns the first one.
func ReadFrame(nc net.Conn) (proto.Frame, error) {
	nc.SetReadDeadline(time.Now().Add(IOTimeout))
	return proto.NewFrameReader(nc, proto.TypeResponse, 4096).ReadFrame()
}

// RawConn is a plain TCP connection whose answers are read by one
// FrameReader, so that answers arriving in one read are all kept.
type RawConn struct {
	NC *net.TCPConn
	fr *proto.FrameReader
}

// DialFrames opens a RawConn to addr, closed when the scenario ends.
func (t *T) DialFrames(addr string) *RawConn {
	nc := t.DialRaw(addr)
	return &RawConn{NC: nc, fr: proto.NewFrameReader(nc, proto.TypeResponse, 0)}
}

// Send encodes frames and writes them in one write, within IOTimeout,
// so that the server's reader takes them in one batch.
func (rc *RawConn) Send(t *T, frames ...proto.Frame) {
	if err := WriteTimed(rc.NC, t.Encode(frames...)); err != nil {
		t.Fatalf("write to %s: %v", rc.Local(), err)
	}
}

// Read returns the next answer, waiting at most IOTimeout for it.
func (rc *RawConn) Read() (proto.Frame, error) {
	rc.NC.SetReadDeadline(time.Now().Add(IOTimeout))
	return rc.fr.ReadFrame()
}

// ReadN returns the next n answers by request ID, and fails the scenario
// if one does not come or an ID comes twice.
func (rc *RawConn) ReadN(t *T, n int) map[uint64]proto.Frame {
	got := make(map[uint64]proto.Frame, n)
	for len(got) < n {
		f, err := rc.Read()
		if err != nil {
			t.Fatalf("connection %s: %d of %d answers, then %v", rc.Local(), len(got), n, err)
		}
		if _, dup := got[f.ID]; dup {
			t.Fatalf("connection %s: request %d answered twice", rc.Local(), f.ID)
		}
		got[f.ID] = f
	}
	return got
}

// Local is the connection's own address: the remote the server logs
// for it.
func (rc *RawConn) Local() string { return rc.NC.LocalAddr().String() }

// ConnNumber returns the server's number for the connection whose remote
// address is remote, from its CONN_OPEN event; it fails the scenario if
// the log has none.
func (t *T) ConnNumber(evs []serverapi.Event, remote string) int64 {
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

// WithStatus encodes the request f with st in its status field, which
// the encoder refuses to do for a request: SPEC.md requires 0 there.
func (t *T) WithStatus(f proto.Frame, st proto.Status) []byte {
	b := t.Encode(f)
	b[statusOffset] = byte(st)
	return b
}
