package netrpcpeer

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestGet(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srv, err := NewServer()
	if err != nil {
		t.Fatal(err)
	}
	go srv.Accept(ln)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	got, err := c.Call(ctx, []byte("account=acct-5"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "account=acct-5 balance=1000 budget=5000 exec=0 replayed=false"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := c.Call(ctx, []byte("account=nobody")); err == nil {
		t.Error("unknown account: got nil error, want one")
	}
}
