package conform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// wire is a raw connection to the server: requests are written as the
// check lays them out, and every frame the server sends is seen.
type wire struct {
	nc net.Conn
	fr *proto.FrameReader
	// head holds the first bytes read from the connection, so that a
	// server that does not speak the protocol can be shown as it spoke.
	head *headReader
	// stop unregisters the context hook that unblocks the connection.
	stop func() bool
	// sent holds the requests written and not yet answered, by ID.
	sent map[uint64]proto.Frame
	// timeout is the check's, for messages.
	timeout time.Duration
}

// dial opens a raw connection bounded by the check's deadline: every read
// and write on it fails once the check's time is up or its context ends.
// The connection is closed when the check ends.
func (p *probe) dial() (*wire, error) {
	var d net.Dialer
	nc, err := d.DialContext(p.ctx, "tcp", p.cfg.Addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := p.ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	head := &headReader{r: nc}
	w := &wire{
		nc:      nc,
		fr:      proto.NewFrameReader(head, proto.TypeResponse, 0),
		head:    head,
		stop:    context.AfterFunc(p.ctx, func() { nc.SetDeadline(time.Unix(1, 0)) }),
		sent:    map[uint64]proto.Frame{},
		timeout: p.cfg.Timeout,
	}
	p.conns = append(p.conns, w)
	return w, nil
}

func (p *probe) closeAll() {
	for _, w := range p.conns {
		w.stop()
		w.nc.Close()
	}
	p.conns = nil
}

// encode returns the frames' encodings back to back.
func encode(frames ...proto.Frame) ([]byte, error) {
	var b []byte
	for i := range frames {
		var err error
		if b, err = proto.AppendFrame(b, &frames[i]); err != nil {
			return nil, fmt.Errorf("conform: encoding request %d: %w", frames[i].ID, err)
		}
	}
	return b, nil
}

// track records frames as sent on w, so that their answers are accepted.
func (w *wire) track(frames ...proto.Frame) {
	for _, f := range frames {
		w.sent[f.ID] = f
	}
}

// write writes b in one call.
func (w *wire) write(b []byte) error {
	if _, err := w.nc.Write(b); err != nil {
		return fmt.Errorf("write: %w", w.describe(err))
	}
	return nil
}

// send writes the frames in one write.
func (w *wire) send(frames ...proto.Frame) error {
	b, err := encode(frames...)
	if err != nil {
		return err
	}
	w.track(frames...)
	return w.write(b)
}

// recv returns the server's next frame, checked against the request it
// answers: it must carry the ID of a request sent on this connection and
// not answered yet, that request's method, an empty key and budgetMs 0
// (SPEC.md, Frames).
func (w *wire) recv() (proto.Frame, error) {
	f, err := w.fr.ReadFrame()
	if err != nil {
		return f, fmt.Errorf("waiting for an answer: %w", w.describe(err))
	}
	req, ok := w.sent[f.ID]
	switch {
	case !ok:
		return f, fmt.Errorf("answer with id %d, which no unanswered request on the connection carries: %s", f.ID, brief(f))
	case f.Method != req.Method:
		return f, fmt.Errorf("answer to id %d carries method %q, want %q", f.ID, f.Method, req.Method)
	case f.Key != "":
		return f, fmt.Errorf("answer to id %d carries key %q, want none", f.ID, f.Key)
	case f.BudgetMs != 0:
		return f, fmt.Errorf("answer to id %d carries budgetMs %d, want 0", f.ID, f.BudgetMs)
	}
	delete(w.sent, f.ID)
	return f, nil
}

// call sends f alone and returns its answer.
func (w *wire) call(f proto.Frame) (proto.Frame, error) {
	if err := w.send(f); err != nil {
		return proto.Frame{}, err
	}
	return w.recv()
}

// answers reads until every request in ids is answered, and returns the
// answers by ID and the IDs in the order they arrived.
func (w *wire) answers(ids ...uint64) (map[uint64]proto.Frame, []uint64, error) {
	got := map[uint64]proto.Frame{}
	var order []uint64
	for len(got) < len(ids) {
		f, err := w.recv()
		if err != nil {
			return got, order, fmt.Errorf("%d of %d answered (%s): %w", len(got), len(ids), idList(order), err)
		}
		got[f.ID] = f
		order = append(order, f.ID)
	}
	return got, order, nil
}

// awaitClose reads until the server closes the connection, the check's
// time runs out, or an answer to one of the IDs in stopOn arrives (which
// decides the check without waiting any longer). It returns the IDs
// answered meanwhile and whether the server closed the connection (EOF
// or a reset).
func (w *wire) awaitClose(stopOn ...uint64) (answered []uint64, closed bool, err error) {
	for {
		f, err := w.fr.ReadFrame()
		if err != nil {
			if errors.Is(err, io.EOF) || isReset(err) {
				return answered, true, nil
			}
			if isTimeout(err) {
				return answered, false, nil
			}
			return answered, false, fmt.Errorf("waiting for the close: %w", w.describe(err))
		}
		answered = append(answered, f.ID)
		if slices.Contains(stopOn, f.ID) {
			return answered, false, nil
		}
	}
}

// describe rewords the errors a check's reads and writes end with. The
// original stays in the chain, for errors.Is and errors.As.
func (w *wire) describe(err error) error {
	var pe *proto.ProtocolError
	switch {
	case isTimeout(err):
		return &wireError{fmt.Sprintf("nothing within the check's timeout (%v)", w.timeout), err}
	case errors.Is(err, io.EOF):
		return &wireError{"server closed the connection", err}
	case isReset(err):
		return &wireError{"server reset the connection", err}
	case errors.As(err, &pe):
		return fmt.Errorf("bad frame from the server: %w", err)
	}
	return err
}

// wireError is a read or write error as a CHECK line words it: its text
// replaces the original's, which it wraps.
type wireError struct {
	msg string
	err error
}

func (e *wireError) Error() string { return e.msg }
func (e *wireError) Unwrap() error { return e.err }

// headMax is how many of a connection's first bytes a headReader keeps.
const headMax = 64

// headReader reads r and keeps the first headMax bytes read.
type headReader struct {
	r    io.Reader
	head []byte
}

func (h *headReader) Read(b []byte) (int, error) {
	n, err := h.r.Read(b)
	if k := min(n, headMax-len(h.head)); k > 0 {
		h.head = append(h.head, b[:k]...)
	}
	return n, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isReset reports whether err says the peer aborted the connection.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// brief is an answer as a CHECK field shows it: status and payload.
func brief(f proto.Frame) string {
	if len(f.Payload) == 0 {
		return f.Status.String()
	}
	return f.Status.String() + " " + string(f.Payload)
}

// idList formats IDs as "1,3", or "none".
func idList(ids []uint64) string {
	if len(ids) == 0 {
		return "none"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(s, ",")
}
