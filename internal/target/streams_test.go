package target

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rpcbench/rpcbench/internal/report"
)

// liar is a Bank, written frame by frame, that announces
// SETTINGS_MAX_CONCURRENT_STREAMS 2 and refuses a stream past it with
// RST_STREAM(REFUSED_STREAM); with lie set, it debits the account of a
// debit it refused all the same: the bug target_streams_past_limit
// exists for.
type liar struct {
	lie     bool
	mu      sync.Mutex
	balance int64
}

// serveLiar serves l on a loopback listener, one goroutine a connection.
func serveLiar(t *testing.T, l *liar) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.balance = 1000
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { l.serve(c) })
		}
	})
	return ln.Addr().String()
}

func (l *liar) serve(c net.Conn) {
	defer c.Close()
	pre := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c, pre); err != nil {
		return
	}
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	var hbuf strings.Builder
	enc := hpack.NewEncoder(&sbWriter{&hbuf})
	headers := func(id uint32, end bool, fields ...hpack.HeaderField) error {
		hbuf.Reset()
		for _, f := range fields {
			enc.WriteField(f)
		}
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: []byte(hbuf.String()), EndHeaders: true, EndStream: end})
	}
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 2}); err != nil {
		return
	}
	open := map[uint32]string{} // stream -> method
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			method := f.PseudoValue("path")
			if len(open) >= 2 {
				fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream)
				if l.lie && strings.HasSuffix(method, "/Debit") {
					l.debit()
				}
				continue
			}
			open[f.StreamID] = method
		case *http2.DataFrame:
			method, ok := open[f.StreamID]
			if !ok || !f.StreamEnded() {
				continue
			}
			delete(open, f.StreamID)
			if strings.HasSuffix(method, "/Debit") {
				l.debit()
			}
			l.mu.Lock()
			msg := protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), uint64(l.balance))
			l.mu.Unlock()
			frame := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg)))
			headers(f.StreamID, false, hpack.HeaderField{Name: ":status", Value: "200"}, hpack.HeaderField{Name: "content-type", Value: "application/grpc"})
			fr.WriteData(f.StreamID, false, append(frame, msg...))
			headers(f.StreamID, true, hpack.HeaderField{Name: "grpc-status", Value: "0"})
		}
	}
}

func (l *liar) debit() {
	l.mu.Lock()
	l.balance--
	l.mu.Unlock()
}

type sbWriter struct{ b *strings.Builder }

func (w *sbWriter) Write(p []byte) (int, error) { return w.b.Write(p) }

// target_streams_past_limit fails a service that executes a call it
// refused with REFUSED_STREAM past its own limit, and passes one that
// does not.
func TestStreamsPastLimit(t *testing.T) {
	t.Parallel()
	for _, lie := range []bool{false, true} {
		s := bankService(t, serveLiar(t, &liar{lie: lie}), true, false)
		s.Oracle.PerExec = -1
		l := runIn(t.TempDir(), s, "target_streams_past_limit")
		want := report.Pass
		if lie {
			want = report.Fail
		}
		if l.Verdict != want || field(l, "maxStreams") != "2" || field(l, "extra") != "RST_REFUSED_STREAM" {
			t.Errorf("lie=%v: %s, want %s with maxStreams=2 extra=RST_REFUSED_STREAM", lie, report.Format(l), want)
		}
	}
}
