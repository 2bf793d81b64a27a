package grpcpeer

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/mem"
)

func TestCodecRoundTrip(t *testing.T) {
	var c Codec
	for _, v := range []any{[]byte("account=acct-3"), new([]byte("account=acct-3"))} {
		bs, err := c.Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(%T): %v", v, err)
		}
		var got []byte
		if err := c.Unmarshal(bs, &got); err != nil {
			t.Fatalf("Unmarshal: %v", err)
		}
		if string(got) != "account=acct-3" {
			t.Errorf("%T: got %q, want %q", v, got, "account=acct-3")
		}
	}
}

func TestCodecRejectsOtherTypes(t *testing.T) {
	var c Codec
	if _, err := c.Marshal("a string"); err == nil {
		t.Error("Marshal(string): got nil error, want one")
	}
	var s string
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer("x")}, &s); err == nil {
		t.Error("Unmarshal(*string): got nil error, want one")
	}
}

func TestUnaryGet(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer()
	go srv.Serve(ln)
	defer srv.Stop()
	c, err := Dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	got, err := c.Call(ctx, []byte("account=acct-42"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "account=acct-42 balance=1000 budget=5000 exec=0 replayed=false"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := c.Call(ctx, []byte("account=nobody")); err == nil {
		t.Error("unknown account: got nil error, want one")
	}
}
