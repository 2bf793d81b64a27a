package drpcpeer

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

func TestEncodingRoundTrip(t *testing.T) {
	var e Encoding
	for _, v := range []any{[]byte("account=acct-3"), new([]byte("account=acct-3"))} {
		b, err := e.Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(%T): %v", v, err)
		}
		appended, err := e.MarshalAppend([]byte("x"), v)
		if err != nil {
			t.Fatalf("MarshalAppend(%T): %v", v, err)
		}
		if got, want := string(appended), "x"+string(b); got != want {
			t.Errorf("MarshalAppend(%T): got %q, want %q", v, got, want)
		}
		var got []byte
		if err := e.Unmarshal(b, &got); err != nil {
			t.Fatalf("Unmarshal: %v", err)
		}
		if string(got) != "account=acct-3" {
			t.Errorf("%T: got %q, want %q", v, got, "account=acct-3")
		}
	}
}

func TestUnmarshalCopies(t *testing.T) {
	buf := []byte("account=acct-3")
	var got []byte
	if err := (Encoding{}).Unmarshal(buf, &got); err != nil {
		t.Fatal(err)
	}
	buf[0] = 'X' // drpc reuses its buffer after Unmarshal
	if string(got) != "account=acct-3" {
		t.Errorf("got %q after the buffer changed, want a copy %q", got, "account=acct-3")
	}
}

func TestEncodingRejectsOtherTypes(t *testing.T) {
	var e Encoding
	if _, err := e.Marshal("a string"); err == nil {
		t.Error("Marshal(string): got nil error, want one")
	}
	var s string
	if err := e.Unmarshal([]byte("x"), &s); err == nil {
		t.Error("Unmarshal(*string): got nil error, want one")
	}
}

func TestUnaryGet(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()
	defer func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: got %v, want nil after its context ended", err)
		}
	}()

	// Two connections, each with two goroutines: a Conn serializes its
	// calls, and stays right when they overlap.
	var conns []*Conn
	for range 2 {
		c, err := Dial(ctx, ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			c := conns[g%2]
			for i := range 50 {
				acct := fmt.Sprintf("acct-%d", (g*50+i)%64)
				got, err := c.Call(ctx, []byte("account="+acct))
				if err != nil {
					errs <- err
					return
				}
				if want := "account=" + acct + " balance=1000 budget=5000 exec=0 replayed=false"; string(got) != want {
					errs <- fmt.Errorf("got %q, want %q", got, want)
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
	if _, err := conns[0].Call(ctx, []byte("account=nobody")); err == nil {
		t.Error("unknown account: got nil error, want one")
	}
	// The connection serves on after an error answer.
	if _, err := conns[0].Call(ctx, []byte("account=acct-1")); err != nil {
		t.Errorf("after an error answer: %v", err)
	}
}
