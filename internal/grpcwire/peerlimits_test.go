package grpcwire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// limitCounts returns the counts of the server's LIMIT events for limit,
// in order, checking that each says wire=grpc.
func (ts *testServer) limitCounts(t *testing.T, limit string) []int64 {
	t.Helper()
	var out []int64
	for _, e := range ts.events(t, serverapi.EventLimit) {
		if e.Text(serverapi.KeyLimit) != limit {
			continue
		}
		if e.Text(serverapi.KeyWire) != serverapi.WireGRPC {
			t.Errorf("LIMIT %v without wire=grpc", e)
		}
		n, _ := e.Int(serverapi.KeyCount)
		out = append(out, n)
	}
	return out
}

// TestMaxConnsExact: with MaxConns connections open, each served, the
// next ones are closed on accept, before the server writes anything (no
// goroutine started for them: not even its SETTINGS), counted
// conns_rejected; the burst logs one LIMIT at once, and the rest when
// the server closes. A connection closed frees its place.
func TestMaxConnsExact(t *testing.T) {
	const maxConns, extra = 3, 3
	ts := startConfig(t, func(c *Config) { c.MaxConns = maxConns })
	var served []*h2client
	for i := range maxConns {
		c := dial(t, ts.addr)
		c.ping([8]byte{byte(i)})
		served = append(served, c)
	}
	for range extra {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, err := io.Copy(io.Discard, nc)
		if err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("connection past MaxConns: %v, want it closed on accept", err)
		}
		if n != 0 {
			t.Errorf("connection past MaxConns got %d bytes, want none (closed before the SETTINGS)", n)
		}
	}
	f := ts.counters(t)
	if f["conns_rejected"] != extra || f["conns_open"] != maxConns || f["conns_accepted"] != maxConns+extra {
		t.Errorf("conns_rejected=%d conns_open=%d conns_accepted=%d, want %d, %d, %d",
			f["conns_rejected"], f["conns_open"], f["conns_accepted"], extra, maxConns, maxConns+extra)
	}
	if n := len(ts.events(t, serverapi.EventConnOpen)); n != maxConns {
		t.Errorf("%d CONN_OPEN events, want %d", n, maxConns)
	}
	if got := ts.limitCounts(t, "max-conns"); len(got) != 1 || got[0] != 1 {
		t.Errorf("LIMIT max-conns counts %v during the burst, want [1]: the first at once, the rest held for a second", got)
	}
	// A place freed is taken again.
	served[0].nc.Close()
	ts.awaitCounter(t, func(f map[string]int64) bool { return f["conns_open"] == maxConns-1 })
	dial(t, ts.addr).ping([8]byte{9})
	ts.Close()
	if got := ts.limitCounts(t, "max-conns"); len(got) != 2 || got[0]+got[1] != extra {
		t.Errorf("LIMIT max-conns counts %v after Close, want [1 %d]: Close logs what was pending", got, extra-1)
	}
}

// echoReplyLen is the DATA bytes of the answer to echoMsg(n): the
// message as the request's, with its prefix.
func echoReplyLen(n int) int64 { return int64(prefixLen + len(echoMsg(n))) }

// sendOne sends an echo of n bytes on c and waits until the server has
// executed or refused it, want counting the requests so far, and has
// counted wantOut bytes queued: an answer is queued a moment after its
// execution is counted, and the next request must find it there.
func (ts *testServer) sendOne(t *testing.T, c *h2client, n int, want, wantOut int64) uint32 {
	t.Helper()
	id := c.send(pathEcho, echoMsg(n), nil)
	ts.awaitCounter(t, func(f map[string]int64) bool { return f["exec.echo"]+f["streams_refused"] == want })
	deadline := time.Now().Add(2 * time.Second)
	for ts.outTotal.Load() != wantOut {
		if time.Now().After(deadline) {
			f := ts.counters(t)
			t.Fatalf("echo %d: %d bytes queued (exec.echo=%d streams_refused=%d), want %d", want, ts.outTotal.Load(), f["exec.echo"], f["streams_refused"], wantOut)
		}
		time.Sleep(time.Millisecond) // polling the count: no event to wait on
	}
	return id
}

// TestMaxOutBytesExact: a client that grants no send window holds its
// answers' DATA on the server; with MaxOutBytes of them queued, a new
// request is refused RST_STREAM(REFUSED_STREAM), unexecuted, counted
// streams_refused and unavailable, and logged LIMIT max-out-bytes. Once
// the client grants the window, the answers go out and the connection
// takes requests again; nothing stays counted.
func TestMaxOutBytesExact(t *testing.T) {
	const payload, sent = 1000, 5
	reply := echoReplyLen(payload)
	tests := []struct {
		name  string
		limit int64
		taken int64
	}{
		{"at_two_replies", 2 * reply, 2},
		{"one_byte_more", 2*reply + 1, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startConfig(t, func(c *Config) { c.MaxOutBytes = tt.limit })
			c := dial(t, ts.addr)
			c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
			var ids []uint32
			for i := range int64(sent) {
				ids = append(ids, ts.sendOne(t, c, payload, i+1, min(i+1, tt.taken)*reply))
			}
			f := ts.counters(t)
			if f["exec.echo"] != tt.taken || f["streams_refused"] != sent-tt.taken || f["unavailable"] != sent-tt.taken {
				t.Errorf("exec.echo=%d streams_refused=%d unavailable=%d, want %d, %d, %d",
					f["exec.echo"], f["streams_refused"], f["unavailable"], tt.taken, sent-tt.taken, sent-tt.taken)
			}
			if got := ts.outTotal.Load(); got != tt.taken*reply {
				t.Errorf("%d bytes counted, want %d", got, tt.taken*reply)
			}
			if got := ts.limitCounts(t, "max-out-bytes"); len(got) != 1 || got[0] != 1 {
				t.Errorf("LIMIT max-out-bytes counts %v, want [1]", got)
			}
			// The window granted, everything goes out: the answers taken,
			// and the refusals that waited behind them.
			c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
			for _, id := range ids {
				r := c.wait(id, false, 2*time.Second)
				refused := r.rst != nil && *r.rst == http2.ErrCodeRefusedStream
				if taken := int64(id/2) < tt.taken; taken && r.status() != "0" || !taken && !refused {
					t.Errorf("stream %d: grpc-status %q RST %v, want the first %d answered 0 and the rest REFUSED_STREAM", id, r.status(), r.rst, tt.taken)
				}
			}
			if r := c.wait(c.send(pathEcho, echoMsg(payload), nil), false, 2*time.Second); r.status() != "0" {
				t.Errorf("an echo once the answers are out: grpc-status %q RST %v, want 0", r.status(), r.rst)
			}
			if got := ts.outTotal.Load(); got != 0 {
				t.Errorf("%d bytes counted once everything is written, want 0", got)
			}
		})
	}
}

// TestMaxOutTotalExact: MaxOutTotal bounds the queued DATA across
// connections: with it reached by two connections' answers, either one's
// next request is refused, LIMIT max-out-total; when one connection
// closes, what it held is uncounted and the other is served again.
func TestMaxOutTotalExact(t *testing.T) {
	const payload = 1000
	reply := echoReplyLen(payload)
	ts := startConfig(t, func(c *Config) { c.MaxOutTotal = 2 * reply })
	a, b := dial(t, ts.addr), dial(t, ts.addr)
	for _, c := range []*h2client{a, b} {
		c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	}
	ts.sendOne(t, a, payload, 1, reply)
	ts.sendOne(t, b, payload, 2, 2*reply)
	ts.sendOne(t, a, payload, 3, 2*reply)
	ts.sendOne(t, b, payload, 4, 2*reply)
	f := ts.counters(t)
	if f["exec.echo"] != 2 || f["streams_refused"] != 2 {
		t.Errorf("exec.echo=%d streams_refused=%d, want 2 and 2 (one answer queued on each connection reaches the total)", f["exec.echo"], f["streams_refused"])
	}
	if got := ts.limitCounts(t, "max-out-total"); len(got) != 1 || got[0] != 1 {
		t.Errorf("LIMIT max-out-total counts %v, want [1]", got)
	}
	a.nc.Close()
	ts.awaitCounter(t, func(f map[string]int64) bool { return f["conns_open"] == 1 })
	if got := ts.outTotal.Load(); got != reply {
		t.Errorf("%d bytes counted after a connection closed, want the other's %d", got, reply)
	}
	ts.sendOne(t, b, payload, 5, 2*reply)
	if f := ts.counters(t); f["exec.echo"] != 3 {
		t.Errorf("exec.echo=%d after a connection closed, want 3: its bytes no longer count", f["exec.echo"])
	}
}

// serveSmallSendBuffer serves the next connection to a listener of its
// own with a server send buffer of 4 KiB, so that a peer that reads
// nothing blocks the writer within a few KiB; it returns the address.
func serveSmallSendBuffer(t *testing.T, ts *testServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		nc.(*net.TCPConn).SetWriteBuffer(4096)
		ts.ServeConn(nc)
	}()
	return ln.Addr().String()
}

// dialNonReading dials addr with a 4 KiB receive buffer from the SYN on,
// and sends the preface and SETTINGS: a peer that will read nothing.
func dialNonReading(t *testing.T, addr string, settings ...http2.Setting) (net.Conn, *http2.Framer) {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		return errors.Join(err, serr)
	}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	fr := http2.NewFramer(nc, nil)
	io.WriteString(nc, http2.ClientPreface)
	fr.WriteSettings(settings...)
	return nc, fr
}

// awaitClosed waits up to within for the server to close its
// connection (CONN_CLOSED).
func (ts *testServer) awaitClosed(t *testing.T, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for len(ts.events(t, serverapi.EventConnClosed)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s: connection not closed within %v (WriteTimeout 1m): the close waits for the blocked writer", what, within)
		}
		time.Sleep(5 * time.Millisecond) // polling the log: no event to wait on
	}
}

// TestCloseNotBehindBlockedWriter: when the peer reads nothing, a flood
// verdict and a connection error close the connection within closeGrace,
// not WriteTimeout: the GOAWAY that cannot be written is given up and
// the connection reset. A flood verdict counts calm_closes; neither is a
// WRITE_TIMEOUT. A peer that reads gets the verdict's
// GOAWAY(ENHANCE_YOUR_CALM), then the close.
func TestCloseNotBehindBlockedWriter(t *testing.T) {
	// Well under WriteTimeout, well over closeGrace with both cores busy.
	const within = 3 * time.Second
	slow := func(c *Config) { c.WriteTimeout = time.Minute }
	t.Run("control_flood", func(t *testing.T) {
		ts := startConfig(t, slow)
		nc, _ := dialNonReading(t, serveSmallSendBuffer(t, ts))
		var batch bytes.Buffer
		bf := http2.NewFramer(&batch, nil)
		for range 3 * maxQueuedControl {
			bf.WritePing(false, [8]byte{1})
		}
		go nc.Write(batch.Bytes()) // may block: the server stops reading
		ts.await(t, serverapi.EventProtocolError, within)
		ts.awaitClosed(t, within, "PING flood")
		if f := ts.counters(t); f["calm_closes"] != 1 || f["write_timeouts"] != 0 {
			t.Errorf("calm_closes=%d write_timeouts=%d, want 1 and 0", f["calm_closes"], f["write_timeouts"])
		}
	})
	t.Run("conn_error", func(t *testing.T) {
		ts := startConfig(t, slow)
		nc, fr := dialNonReading(t, serveSmallSendBuffer(t, ts), http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30})
		fr.WriteWindowUpdate(0, 1<<30)
		c := &h2client{t: t, nc: nc, fr: fr, nextID: 1}
		c.enc = hpack.NewEncoder(&c.hbuf)
		const n = 32 // 480 KB of answers, far past the buffers
		for range n {
			c.send(pathEcho, echoMsg(15000), nil)
		}
		ts.awaitCounter(t, func(f map[string]int64) bool { return f["exec.echo"] == n })
		fr.AllowIllegalWrites = true
		fr.WriteData(0, true, []byte("x")) // a connection error
		ts.awaitClosed(t, within, "connection error")
		if f := ts.counters(t); f["calm_closes"] != 0 || f["write_timeouts"] != 0 {
			t.Errorf("calm_closes=%d write_timeouts=%d, want 0 and 0", f["calm_closes"], f["write_timeouts"])
		}
	})
	t.Run("reading_peer", func(t *testing.T) {
		ts := startConfig(t, slow)
		c := dial(t, ts.addr)
		c.ping([8]byte{1})
		ts.mu.Lock()
		var sc *conn
		for k := range ts.conns {
			sc = k
		}
		ts.mu.Unlock()
		sc.calm("grpcwire: test verdict")
		sc.calm("grpcwire: a second verdict on the same connection") // counted once
		r := c.wait(0, true, within)
		if r.goaway == nil || r.goaway.ErrCode != http2.ErrCodeEnhanceYourCalm || r.closedBy() != "eof" {
			t.Errorf("GOAWAY %+v, connection ended by %q; want GOAWAY(ENHANCE_YOUR_CALM), then a close with FIN", r.goaway, r.closedBy())
		}
		if got := ts.counter(t, "calm_closes"); got != 1 {
			t.Errorf("calm_closes=%d after two verdicts on one connection, want 1", got)
		}
	})
}
