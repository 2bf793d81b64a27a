package rawwire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

func TestFrameRoundTrip(t *testing.T) {
	for _, payload := range [][]byte{nil, []byte("account=acct-17"), bytes.Repeat([]byte{0xab}, MaxPayload)} {
		t.Run(fmt.Sprintf("len=%d", len(payload)), func(t *testing.T) {
			b := AppendFrame([]byte("prefix"), 0xdeadbeef, payload)
			b = append(b, "tail"...)
			id, got, rest, ok, err := NextFrame(b[len("prefix"):])
			if err != nil || !ok {
				t.Fatalf("NextFrame: got ok=%v err=%v, want a frame", ok, err)
			}
			if id != 0xdeadbeef {
				t.Errorf("id: got %#x, want 0xdeadbeef", id)
			}
			if !bytes.Equal(got, payload) {
				t.Errorf("payload: got %d bytes, want %d", len(got), len(payload))
			}
			if string(rest) != "tail" {
				t.Errorf("rest: got %q, want %q", rest, "tail")
			}
		})
	}
}

func TestNextFrameIncomplete(t *testing.T) {
	whole := AppendFrame(nil, 7, []byte("hello"))
	for n := range len(whole) {
		_, _, rest, ok, err := NextFrame(whole[:n])
		if ok || err != nil || len(rest) != n {
			t.Errorf("%d of %d bytes: got ok=%v err=%v rest=%d, want an incomplete frame", n, len(whole), ok, err, len(rest))
		}
	}
}

func TestNextFrameTooLong(t *testing.T) {
	hdr := []byte{0, 1, 0, 0, 0, 0, 0, 1} // length 65536, checked before any payload arrives
	if _, _, _, _, err := NextFrame(hdr); !errors.Is(err, ErrFrameTooLong) {
		t.Fatalf("got %v, want ErrFrameTooLong", err)
	}
}

func TestCompleteLen(t *testing.T) {
	a := AppendFrame(nil, 1, []byte("one"))
	ab := AppendFrame(a, 2, []byte("two"))
	tests := []struct {
		name string
		b    []byte
		want int
	}{
		{"empty", nil, 0},
		{"one", a, len(a)},
		{"two", ab, len(ab)},
		{"one and a half", ab[:len(ab)-1], len(a)},
		{"header only", a[:HeaderLen], 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := completeLen(tt.b)
			if err != nil || got != tt.want {
				t.Errorf("got %d, %v, want %d, nil", got, err, tt.want)
			}
		})
	}
}

func TestEchoConcurrent(t *testing.T) {
	callConcurrently(t, serve(t, &Server{}), 16, 200, func(req []byte) string { return string(req) })
}

// dial connects a client to addr, closed when the test ends, and
// returns it with a context that bounds the test's calls.
func dial(t *testing.T, addr string) (context.Context, *Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	c, err := Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ctx, c
}

// callConcurrently makes calls calls from each of goroutines goroutines
// on one client of addr, each answer checked against want(request).
func callConcurrently(t *testing.T, addr string, goroutines, calls int, want func(req []byte) string) {
	t.Helper()
	ctx, c := dial(t, addr)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				req := fmt.Appendf(nil, "g=%d i=%d", g, i)
				got, err := c.Call(ctx, req)
				if err != nil {
					errs <- err
					return
				}
				if w := want(req); string(got) != w {
					errs <- fmt.Errorf("got %q, want %q", got, w)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCallAfterClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var srv Server
	go srv.Serve(ln)
	defer srv.Close()
	c, err := Dial(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := c.Call(context.Background(), []byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v, want ErrClosed", err)
	}
}

// serve starts a Server on a fresh loopback listener and stops it when
// the test ends.
func serve(t *testing.T, srv *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve: got %v, want ErrServerClosed", err)
		}
	})
	return ln.Addr().String()
}

// TestHandleAnswers: with a handler, each frame gets its own answer, of
// another length than its request, when reads carry several frames.
func TestHandleAnswers(t *testing.T) {
	srv := &Server{NewHandler: func() func(dst, payload []byte) []byte {
		return func(dst, payload []byte) []byte {
			dst = append(dst, "re:"...)
			return append(dst, payload...)
		}
	}}
	callConcurrently(t, serve(t, srv), 8, 100, func(req []byte) string { return "re:" + string(req) })
}

func TestHandleAnswerTooLongClosesConn(t *testing.T) {
	srv := &Server{NewHandler: func() func(dst, payload []byte) []byte {
		return func(dst, payload []byte) []byte { return append(dst, make([]byte, MaxPayload+1)...) }
	}}
	ctx, c := dial(t, serve(t, srv))
	if got, err := c.Call(ctx, []byte("x")); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %d bytes, %v; want the connection closed", len(got), err)
	}
}
