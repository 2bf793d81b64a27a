package proxy

import (
	"context"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/rpcbench/rpcbench/internal/rawgrpc"
)

// ids returns each call's attempts as their indexes in all.
func ids(all []Attempt, calls []Call) [][]int {
	var out [][]int
	for _, c := range calls {
		var ix []int
		for _, a := range c.Attempts {
			for i, x := range all {
				if x == a {
					ix = append(ix, i)
				}
			}
		}
		out = append(out, ix)
	}
	return out
}

func TestGroup(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const m, g = "shop.v1.Orders/Place", "shop.v1.Orders/Get"
	for _, c := range []struct {
		name string
		in   []Attempt
		want [][]int
		by   []string
	}{
		{"retries by previous", []Attempt{
			{Method: m, Body: "b1", Timeout: "1S", Start: at(0)},
			{Method: m, Body: "b1", Previous: "1", Start: at(100)},
			{Method: m, Body: "b1", Previous: "2", Start: at(200)},
		}, [][]int{{0, 1, 2}}, []string{"previous"}},
		{"other bytes are another call", []Attempt{
			{Method: m, Body: "b1", Timeout: "1S", Start: at(0)},
			{Method: m, Body: "b2", Previous: "1", Start: at(100)},
		}, [][]int{{0}, {1}}, []string{"single", "single"}},
		{"past the first attempt's deadline", []Attempt{
			{Method: m, Body: "b1", Timeout: "100m", Start: at(0)},
			{Method: m, Body: "b1", Previous: "1", Start: at(300)},
		}, [][]int{{0}, {1}}, []string{"single", "single"}},
		{"a refused attempt with no body matches on the rest", []Attempt{
			{Method: m, Timeout: "1S", Start: at(0)},
			{Method: m, Body: "b1", Previous: "1", Start: at(50)},
		}, [][]int{{0, 1}}, []string{"previous"}},
		{"no previous is a new call, though the bytes are the same", []Attempt{
			{Method: m, Body: "b1", Start: at(0)},
			{Method: m, Body: "b1", Start: at(10)},
		}, [][]int{{0}, {1}}, []string{"single", "single"}},
		{"the key ties, across methods' other calls and without previous", []Attempt{
			{Method: m, Key: "k1", Body: "b1", Start: at(0)},
			{Method: g, Body: "x", Start: at(5)},
			{Method: m, Key: "k1", Body: "b1", Start: at(10)},
			{Method: m, Key: "k2", Body: "b1", Start: at(20)},
		}, [][]int{{0, 2}, {1}, {3}}, []string{"key", "single", "single"}},
		{"a transparent retry follows a refusal at once, uncounted", []Attempt{
			{Method: m, Client: "RST_REFUSED_STREAM", Start: at(0), Ended: at(1)},
			{Method: m, Body: "b1", Start: at(2), Forwarded: true, Client: "OK", Ended: at(5)},
			{Method: m, Body: "b1", Start: at(10)},
		}, [][]int{{0, 1}, {2}}, []string{"transparent", "single"}},
		{"not after a forwarded attempt, nor long after the refusal", []Attempt{
			{Method: m, Client: "GOAWAY", Start: at(0), Ended: at(1)},
			{Method: m, Body: "b1", Start: at(1500)},
			{Method: m, Body: "b1", Start: at(1600), Forwarded: true, Client: "RST_CANCEL"},
		}, [][]int{{0}, {1}, {2}}, []string{"single", "single", "single"}},
		{"previous counts attempts: 2 continues a call of two", []Attempt{
			{Method: m, Body: "b1", Timeout: "5S", Start: at(0)},
			{Method: m, Body: "b1", Timeout: "5S", Start: at(1)},
			{Method: m, Body: "b1", Previous: "1", Start: at(2)},
			{Method: m, Body: "b1", Previous: "2", Start: at(3)},
		}, [][]int{{0}, {1, 2, 3}}, []string{"single", "previous"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls, callOf := Group(c.in)
			got := ids(c.in, calls)
			if len(got) != len(c.want) {
				t.Fatalf("calls %v, want %v", got, c.want)
			}
			for i := range got {
				if len(got[i]) != len(c.want[i]) || calls[i].By != c.by[i] || calls[i].ID != i+1 {
					t.Errorf("call %d: attempts %v by %s (id %d), want %v by %s", i+1, got[i], calls[i].By, calls[i].ID, c.want[i], c.by[i])
					continue
				}
				for j := range got[i] {
					if got[i][j] != c.want[i][j] || callOf[got[i][j]] != i+1 {
						t.Errorf("call %d: attempts %v, want %v (callOf %v)", i+1, got[i], c.want[i], callOf)
					}
				}
			}
		})
	}
}

// Through the proxy: a call refused once before forwarding, and its
// retry carrying grpc-previous-rpc-attempts 1, are one logical call of
// two attempts, the second forwarded; the request bytes are recorded.
func TestGroupThroughProxy(t *testing.T) {
	up := upstream(t)
	p := start(t, up, "kind=unavailable method=Debit count=1")
	c := dial(t, p.Addr())
	msg := rawgrpc.DebitRequest("acct-G", 10, 0, 0)
	for i, prev := range []string{"", "1"} {
		req := rawgrpc.Request{Method: "Debit", Timeout: "10S", Message: msg}
		if prev != "" {
			req.Metadata = []hpack.HeaderField{{Name: "grpc-previous-rpc-attempts", Value: prev}}
		}
		st, err := c.Open(req)
		if err != nil {
			t.Fatal(err)
		}
		r, err := st.Wait(context.Background())
		if want := []string{"UNAVAILABLE", "OK"}[i]; err != nil || r.Outcome() != want {
			t.Fatalf("attempt %d: %s %v, want %s", i+1, r.Outcome(), err, want)
		}
	}
	as := p.Attempts()
	calls, _ := Group(as)
	if len(calls) != 1 || len(calls[0].Attempts) != 2 || calls[0].By != "previous" {
		t.Fatalf("calls %+v, want one of two attempts tied by previous", calls)
	}
	if as[1].Body == "" || as[1].Previous != "1" || as[0].Forwarded || !as[1].Forwarded {
		t.Errorf("attempts %+v", as)
	}
}
