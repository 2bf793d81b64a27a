package proxy

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/rpcbench/rpcbench/internal/rawgrpc"
)

// creditUp is an upstream written frame by frame that answers every call
// with size bytes of DATA and counts the connection window it is given.
type creditUp struct {
	size   int
	mu     sync.Mutex
	credit int64
	// seen is the credit given when each call's HEADERS came: what the
	// proxy queued for the upstream before it.
	seen []int64
}

func (u *creditUp) serve(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { u.conn(c) })
		}
	})
	return ln.Addr().String()
}

func (u *creditUp) conn(c net.Conn) {
	defer c.Close()
	if _, err := io.ReadFull(c, make([]byte, len(http2.ClientPreface))); err != nil {
		return
	}
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	headers := func(id uint32, end bool, kv ...string) {
		buf.Reset()
		for i := 0; i < len(kv); i += 2 {
			enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: buf.Bytes(), EndStream: end, EndHeaders: true})
	}
	fr.WriteSettings()
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
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				u.mu.Lock()
				u.credit += int64(f.Increment)
				u.mu.Unlock()
			}
		case *http2.MetaHeadersFrame:
			u.mu.Lock()
			u.seen = append(u.seen, u.credit)
			u.mu.Unlock()
		case *http2.DataFrame:
			if !f.StreamEnded() {
				continue
			}
			// Within the 64 KiB the proxy's initial windows allow.
			headers(f.StreamID, false, ":status", "200", "content-type", "application/grpc")
			for left := u.size; left > 0; left -= 16384 {
				fr.WriteData(f.StreamID, false, make([]byte, min(left, 16384)))
			}
			headers(f.StreamID, true, "grpc-status", "0")
		}
	}
}

// A late rule's held answer is credited to the upstream once, as it
// goes to the client, as a forwarded one is: no more window than the
// DATA it passed on (it was credited once as it came and again as it
// went). The credit for the first call is what the upstream was given
// by the time the second call's HEADERS came: the proxy queues it before
// it ends the first call for its client.
func TestLateCreditsOnce(t *testing.T) {
	const size = 40000
	for _, rules := range [][]string{nil, {"kind=late method=Debit delay=20ms"}} {
		u := &creditUp{size: size}
		p := start(t, u.serve(t), rules...)
		c := dial(t, p.Addr())
		for range 2 {
			if r := call(t, c, "Debit", rawgrpc.DebitRequest("acct-L", 1, 0, 0), "10S"); r.Outcome() != "OK" {
				t.Fatalf("rules %v: the client got %s", rules, r.Outcome())
			}
		}
		u.mu.Lock()
		got := u.seen[1] - u.seen[0]
		u.mu.Unlock()
		if got != size {
			t.Errorf("rules %v: the upstream was credited %d bytes for an answer of %d", rules, got, size)
		}
	}
}
