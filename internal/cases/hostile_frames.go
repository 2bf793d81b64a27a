package cases

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

func hostileGarbageBytes(t *T) {
	const (
		conns = 50
		held  = 1024 // bytes each connection sends before the polite gets
	)
	s := t.startServer(serverOpts{})
	c := t.politeClient(s)
	w := t.watch(s)

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
		ncs[i] = t.dialRaw(s.Addr)
		if err := writeTimed(ncs[i], b[:held]); err != nil && !isReset(err) {
			t.Fatalf("garbage connection %d: %v", i, err)
		}
	}
	t.awaitTakeIn(s, "even connections refused, odd ones open", func(ctr counters) bool {
		return ctr.ProtocolErrors >= conns/2 && ctr.ConnsOpen >= w.before.connsOpen+conns/2
	})

	var during, after polite
	during.gets(t, c, politeDuring)
	w.sampleDuring()

	// The even ones are closed already; writing to them may fail.
	closed, notClosed := finishAndAwaitClose(ncs, func(i int) []byte { return garbage[i][held:] })
	ctr := w.settle()
	after.gets(t, c, politeAfter)

	t.Field("conns", conns)
	t.Field("heldMidFrame", conns/2)
	expectf(t, "closedByServer", closed, conns, "last left open: %v", notClosed)
	expect(t, "protocolErrors", ctr.ProtocolErrors, conns)
	t.Field("politeDuring", &during)
	t.Field("politeAfter", &after)
	w.report(rssLimitKB)
	during.check(t, "during the attack")
	after.check(t, "after the attack")
}

func hostileHugeLengthPrefix(t *T) {
	const (
		conns = 20
		// A server that trusted the prefix would read this much body
		// into its buffers: 20 MiB in all, over rssLimitTightKB.
		filler = 1 << 20
		// It would also have reserved 2 GiB a connection, resident or
		// not, so its address space must grow by less than one such
		// buffer. The allowance is for threads: each new one maps a
		// stack and a 64 MiB glibc arena, and runs have seen up to
		// 264 MiB.
		vmLimitKB = 1 << 20
	)
	s := t.startServer(serverOpts{})
	c := t.politeClient(s)
	w := t.watch(s)
	vmBefore := w.kb("VmPeak")

	// Each connection sends half of the prefix 0x7fffffff first, so the
	// server must wait for the rest while the polite client is served.
	ncs := make([]*net.TCPConn, conns)
	for i := range ncs {
		ncs[i] = t.dialRaw(s.Addr)
		if err := writeTimed(ncs[i], []byte{0x7f, 0xff}); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	t.awaitTakeIn(s, "connections open", func(ctr counters) bool {
		return ctr.ConnsOpen >= w.before.connsOpen+conns
	})

	var during, after polite
	during.gets(t, c, politeDuring)
	w.sampleDuring()

	rest := make([]byte, 2+filler)
	rest[0], rest[1] = 0xff, 0xff
	// The server closes as soon as it has the prefix, so the filler may
	// meet a reset.
	closed, notClosed := finishAndAwaitClose(ncs, func(int) []byte { return rest })
	ctr := w.settle()
	after.gets(t, c, politeAfter)

	t.Field("conns", conns)
	t.Field("prefix", "0x7fffffff")
	t.Field("fillerBytes", filler)
	expectf(t, "closedByServer", closed, conns, "last left open: %v", notClosed)
	expect(t, "protocolErrors", ctr.ProtocolErrors, conns)
	t.Field("politeDuring", &during)
	t.Field("politeAfter", &after)
	w.report(rssLimitTightKB)
	if vmAfter := w.kb("VmPeak"); vmBefore >= 0 && vmAfter >= 0 {
		t.Volatile("vmPeakGrowthKB", vmAfter-vmBefore)
		t.Check(vmAfter-vmBefore <= vmLimitKB, "server address space peaked %d kB above its baseline, limit %d kB", vmAfter-vmBefore, vmLimitKB)
	}
	during.check(t, "during the attack")
	after.check(t, "after the attack")
}

func hostileResetMidFrame(t *T) {
	const conns = 20
	s := t.startServer(serverOpts{})
	c := t.politeClient(s)
	w := t.watch(s)

	// A whole get answered first shows that the connection's reader is
	// running; then half of a second get, then an RST.
	whole := t.requestBytes(1, bank.MethodGet, "account=acct-reset")
	second := t.requestBytes(2, bank.MethodGet, "account=acct-reset")
	half := len(second) / 2
	ncs := make([]*net.TCPConn, conns)
	for i := range ncs {
		ncs[i] = t.dialRaw(s.Addr)
		if err := writeTimed(ncs[i], whole); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if f, err := readFrame(ncs[i]); err != nil || f.ID != 1 || f.Status != proto.StatusOK {
			t.Fatalf("connection %d: first get answered %v %v %q", i, err, f.Status, f.Payload)
		}
		if err := writeTimed(ncs[i], second[:half]); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}

	var during, after polite
	during.gets(t, c, politeDuring)
	w.sampleDuring()

	var resetErr error
	for _, nc := range ncs {
		if err := resetConn(nc); err != nil {
			resetErr = err
		}
	}
	ctr := w.settle()
	after.gets(t, c, politeAfter)
	evs := t.events(s)
	midFrame := countEvents(evs, func(e serverapi.Event) bool {
		n, _ := e.Int(serverapi.KeyBuffered)
		return e.Name == serverapi.EventConnClosedMidFrame && n == int64(half)
	})
	resets := countEvents(evs, func(e serverapi.Event) bool {
		return e.Name == serverapi.EventConnReadError && e.Bool(serverapi.KeyReset)
	})

	t.Field("conns", conns)
	t.Field("halfFrameBytes", half)
	expectf(t, "loggedMidFrame", midFrame, conns, "closes logged mid-frame with %d bytes buffered", half)
	expectf(t, "loggedResets", resets, conns, "read errors logged for a reset")
	expectf(t, "protocolErrors", ctr.ProtocolErrors, 0, "a reset is not a bad frame")
	t.Field("politeDuring", &during)
	t.Field("politeAfter", &after)
	w.report(rssLimitKB)
	t.Check(resetErr == nil, "reset: %v", resetErr)
	during.check(t, "during the attack")
	after.check(t, "after the attack")
}

// finishAndAwaitClose writes rest(i) to each connection i, where a reset
// is expected since the server may have closed it already, then waits for
// the server to close it. It returns how many the server closed, and the
// last failure.
func finishAndAwaitClose(ncs []*net.TCPConn, rest func(i int) []byte) (closed int, err error) {
	for i, nc := range ncs {
		if werr := writeTimed(nc, rest(i)); werr != nil && !isReset(werr) {
			err = fmt.Errorf("connection %d: %w", i, werr)
			continue
		}
		if cerr := awaitClose(nc); cerr != nil {
			err = fmt.Errorf("connection %d: %w", i, cerr)
			continue
		}
		closed++
		nc.Close()
	}
	return closed, err
}
