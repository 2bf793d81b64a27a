package conform

import (
	"errors"
	"fmt"
	"io"

	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// drainCheck runs only with Config.Drain, and last: it stops the server.
var drainCheck = check{"drain_finishes_taken", "dr",
	"(--drain only; stops the server) a get that sleeps is taken (a ctl.ping after it is answered), then ctl.drain on another connection: that one gets OK, a drain frame naming 0 and a close; the get's gets a drain frame naming the get, the get's OK answer, no answer to a get sent after the drain frame, and a close",
	drainFinishesTaken}

// drainSeen is what one connection showed of a drain.
type drainSeen struct {
	drainID  int64 // -1 when no drain frame came
	answered map[uint64]proto.Frame
	closed   bool // the server closed its side (EOF)
}

// readDrain reads a connection until the server closes it or the check's
// time runs out; after the drain frame it sends after, if set, once.
func readDrain(w *wire, after *proto.Frame) (drainSeen, error) {
	seen := drainSeen{drainID: -1, answered: map[uint64]proto.Frame{}}
	for {
		f, err := w.fr.ReadFrame()
		switch {
		case errors.Is(err, io.EOF):
			seen.closed = true
			return seen, nil
		case isTimeout(err):
			return seen, nil
		case err != nil:
			return seen, fmt.Errorf("reading until the close: %w", w.describe(err))
		}
		if f.Type != proto.TypeDrain {
			seen.answered[f.ID] = f
			continue
		}
		if seen.drainID >= 0 {
			return seen, fmt.Errorf("a second drain frame (id %d) on the connection", f.ID)
		}
		seen.drainID = int64(f.ID)
		if after != nil {
			if err := w.send(*after); err != nil {
				return seen, err
			}
		}
	}
}

func drainFinishesTaken(p *probe) error {
	a, err := p.dial()
	if err != nil {
		return err
	}
	b, err := p.dial()
	if err != nil {
		return err
	}
	slow := p.get(1, p.name("slow"), fmt.Sprintf("sleep=%d", p.slowMs()))
	if err := a.send(slow); err != nil {
		return err
	}
	// The ping is answered after the get was read: the get is taken.
	if err := p.pingOn(a, 2); err != nil {
		return err
	}
	if err := b.send(p.request(1, serverapi.MethodDrain, "", "")); err != nil {
		return err
	}
	onB, err := readDrain(b, nil)
	if err != nil {
		return err
	}
	ans, ok := onB.answered[1]
	expect(p, "drainAnswer", ok && ans.Status == proto.StatusOK, true, "ctl.drain must be answered OK before its connection's drain frame")
	expect(p, "drainConnID", onB.drainID, 0, "a connection that sent no business request names id 0")
	expect(p, "drainConnClosed", onB.closed, true, "with nothing taken, the server must close at once")

	late := p.get(3, p.name("late"))
	onA, err := readDrain(a, &late)
	if err != nil {
		return err
	}
	expect(p, "drainID", onA.drainID, 1, "the drain frame must name the get, the last request taken")
	got, ok := onA.answered[slow.ID]
	expect(p, "takenAnswered", ok && got.Status == proto.StatusOK, true, "a taken request must be finished and answered")
	_, lateAnswered := onA.answered[late.ID]
	expect(p, "afterDrainAnswered", lateAnswered, false, "a request sent after the drain frame must be dropped")
	expect(p, "closed", onA.closed, true, "once what it took is answered, the server must close its side")
	return nil
}
