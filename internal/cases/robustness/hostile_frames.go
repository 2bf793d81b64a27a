package robustness

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

func hostileGarbageBytes(t *scenario.T) {
	const (
		conns = 50
		held  = 1024 // bytes each connection sends before the polite gets
	)
	s := t.StartServer(scenario.ServerOpts{})
	c := t.PoliteClient(s)
	w := t.Watch(s)

	// Even connections send a first byte other than 0, which declares a
	// frame over 16 MiB: refused on the prefix alone. Odd ones declare
	// their own length, so the server awaits the whole body before it
	// finds the magic wrong; until then they hold half a frame.
	rng := rand.New(rand.NewPCG(50, 4096))
	garbage := make([][]byte, conns)
	ncs := make([]*net.TCPConn, conns)
	for i := range ncs {
		b := make([]byte, 2048+rng.IntN(2049))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if i%2 == 0 {
			b[0] = max(b[0], 1)
		} else {
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			if binary.BigEndian.Uint16(b[4:]) == proto.Magic {
				b[4] ^= 0xff
			}
		}
		garbage[i] = b
		ncs[i] = t.DialRaw(s.Addr)
		if err := scenario.WriteTimed(ncs[i], b[:held]); err != nil && !scenario.IsReset(err) {
			t.Fatalf("garbage connection %d: %v", i, err)
		}
	}
	t.AwaitTakeIn(s, "even connections refused, odd ones open", func(ctr scenario.Counters) bool {
		return ctr.ProtocolErrors >= conns/2 && ctr.ConnsOpen >= w.Before.ConnsOpen+conns/2
	})

	var during, after scenario.Polite
	during.Gets(t, c, scenario.PoliteDuring)
	w.SampleDuring()

	// The even ones are closed already; writing to them may fail.
	closed, notClosed := finishAndAwaitClose(ncs, func(i int) []byte { return garbage[i][held:] })
	ctr := w.Settle()
	after.Gets(t, c, scenario.PoliteAfter)

	t.Field("conns", conns)
	t.Field("heldMidFrame", conns/2)
	scenario.Expectf(t, "closedByServer", closed, conns, "last left open: %v", notClosed)
	scenario.Expect(t, "protocolErrors", ctr.ProtocolErrors, conns)
	t.Field("politeDuring", &during)
	t.Field("politeAfter", &after)
	w.Report(scenario.RSSLimitKB)
	during.Check(t, "during the attack")
	after.Check(t, "after the attack")
}

func hostileHugeLengthPrefix(t *scenario.T) {
	const (
		conns = 20
		// A server that trusted the prefix would read this much body
		// into its buffers: 20 MiB in all, over RSSLimitTightKB.
		filler = 1 << 20
		// It would also have reserved 2 GiB a connection, resident or
		// not, so its address space must grow by less than one such
		// buffer. The allowance is for threads: each new one maps a
		// stack and a 64 MiB glibc arena, and runs have seen up to
		// 264 MiB.
		vmLimitKB = 1 << 20
	)
	s := t.StartServer(scenario.ServerOpts{})
	c := t.PoliteClient(s)
	w := t.Watch(s)
	vmBefore := w.KB("VmPeak")

	// Each connection sends half of the prefix 0x7fffffff first, so the
	// server must wait for the rest while the polite client is served.
	ncs := make([]*net.TCPConn, conns)
	for i := range ncs {
		ncs[i] = t.DialRaw(s.Addr)
		if err := scenario.WriteTimed(ncs[i], []byte{0x7f, 0xff}); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	t.AwaitTakeIn(s, "connections open", func(ctr scenario.Counters) bool {
		return ctr.ConnsOpen >= w.Before.ConnsOpen+conns
	})

	var during, after scenario.Polite
	during.Gets(t, c, scenario.PoliteDuring)
	w.SampleDuring()

	rest := make([]byte, 2+filler)
	rest[0], rest[1] = 0xff, 0xff
	// The server closes as soon as it has the prefix, so the filler may
	// meet a reset.
	closed, notClosed := finishAndAwaitClose(ncs, func(int) []byte { return rest })
	ctr := w.Settle()
	after.Gets(t, c, scenario.PoliteAfter)

	t.Field("conns", conns)
	t.Field("prefix", "0x7fffffff")
	t.Field("fillerBytes", filler)
	scenario.Expectf(t, "closedByServer", closed, conns, "last left open: %v", notClosed)
	scenario.Expect(t, "protocolErrors", ctr.ProtocolErrors, conns)
	t.Field("politeDuring", &during)
	t.Field("politeAfter", &after)
	w.Report(scenario.RSSLimitTightKB)
	if vmAfter := w.KB("VmPeak"); vmBefore >= 0 && vmAfter >= 0 {
		t.Volatile("vmPeakGrowthKB", vmAfter-vmBefore)
		t.Check(vmAfter-vmBefore <= vmLimitKB, "server address space peaked %d kB above its baseline, limit %d kB", vmAfter-vmBefore, vmLimitKB)
	}
	during.Check(t, "during the attack")
	after.Check(t, "after the attack")
}

func hostileResetMidFrame(t *scenario.T) {
	const conns = 20
	s := t.StartServer(scenario.ServerOpts{})
	c := t.PoliteClient(s)
	w := t.Watch(s)

	// A whole get answered first shows that the connection's reader is
	// running; then half of a second get, then an RST.
	whole := t.RequestBytes(1, bank.MethodGet, "account=acct-reset")
	second := t.RequestBytes(2, bank.MethodGet, "account=acct-reset")
	half := len(second) / 2
	ncs := make([]*net.TCPConn, conns)
	for i := range ncs {
		ncs[i] = t.DialRaw(s.Addr)
		if err := scenario.WriteTimed(ncs[i], whole); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if f, err := scenario.ReadFrame(ncs[i]); err != nil || f.ID != 1 || f.Status != proto.StatusOK {
			t.Fatalf("connection %d: first get answered %v %v %q", i, err, f.Status, f.Payload)
		}
		if err := scenario.WriteTimed(ncs[i], second[:half]); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}

	var during, after scenario.Polite
	during.Gets(t, c, scenario.PoliteDuring)
	w.SampleDuring()

	var resetErr error
	for _, nc := range ncs {
		if err := scenario.ResetConn(nc); err != nil {
			resetErr = err
		}
	}
	ctr := w.Settle()
	after.Gets(t, c, scenario.PoliteAfter)
	evs := t.Events(s)
	midFrame := scenario.CountEvents(evs, func(e serverapi.Event) bool {
		n, _ := e.Int(serverapi.KeyBuffered)
		return e.Name == serverapi.EventConnClosedMidFrame && n == int64(half)
	})
	resets := scenario.CountEvents(evs, func(e serverapi.Event) bool {
		return e.Name == serverapi.EventConnReadError && e.Bool(serverapi.KeyReset)
	})

	t.Field("conns", conns)
	t.Field("halfFrameBytes", half)
	scenario.Expectf(t, "loggedMidFrame", midFrame, conns, "closes logged mid-frame with %d bytes buffered", half)
	scenario.Expectf(t, "loggedResets", resets, conns, "read errors logged for a reset")
	scenario.Expectf(t, "protocolErrors", ctr.ProtocolErrors, 0, "a reset is not a bad frame")
	t.Field("politeDuring", &during)
	t.Field("politeAfter", &after)
	w.Report(scenario.RSSLimitKB)
	t.Check(resetErr == nil, "reset: %v", resetErr)
	during.Check(t, "during the attack")
	after.Check(t, "after the attack")
}

// finishAndAwaitClose writes rest(i) to each connection i, where a reset
// is expected since the server may have closed it already, then waits for
// the server to close it. It returns how many the server closed, and the
// last failure.
func finishAndAwaitClose(ncs []*net.TCPConn, rest func(i int) []byte) (closed int, err error) {
	for i, nc := range ncs {
		if werr := scenario.WriteTimed(nc, rest(i)); werr != nil && !scenario.IsReset(werr) {
			err = fmt.Errorf("connection %d: %w", i, werr)
			continue
		}
		if cerr := scenario.AwaitClose(nc); cerr != nil {
			err = fmt.Errorf("connection %d: %w", i, cerr)
			continue
		}
		closed++
		nc.Close()
	}
	return closed, err
}
