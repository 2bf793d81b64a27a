package workload

import (
	"errors"
	"testing"
)

func TestRequests(t *testing.T) {
	reqs := Requests()
	if len(reqs) != Accounts {
		t.Fatalf("got %d requests, want %d", len(reqs), Accounts)
	}
	if got, want := string(reqs[17]), "account=acct-17"; got != want {
		t.Errorf("request 17: got %q, want %q", got, want)
	}
}

func TestStoreGet(t *testing.T) {
	s := NewStore()
	tests := []struct {
		req, want string
		err       error
	}{
		{req: "account=acct-7", want: "account=acct-7 balance=1000 budget=5000 exec=0 replayed=false"},
		{req: "sleep=0 account=acct-63", want: "account=acct-63 balance=1000 budget=5000 exec=0 replayed=false"},
		{req: "account=acct-64", err: ErrBadRequest},
		{req: "account=", err: ErrBadRequest},
		{req: "acct-7", err: ErrBadRequest},
		{req: "", err: ErrBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.req, func(t *testing.T) {
			got, err := s.Get([]byte(tt.req))
			if !errors.Is(err, tt.err) {
				t.Fatalf("error: got %v, want %v", err, tt.err)
			}
			if string(got) != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name, req, resp string
		ok              bool
	}{
		{"full answer", "account=acct-1", "account=acct-1 balance=1000 budget=4999 exec=0 replayed=false", true},
		{"echo", "account=acct-1", "account=acct-1", true},
		{"other account sharing a prefix", "account=acct-1", "account=acct-17 balance=1000", false},
		{"other account", "account=acct-1", "account=acct-2 balance=1000", false},
		{"empty", "account=acct-1", "", false},
		{"error text", "account=acct-1", "queue full", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check([]byte(tt.req), []byte(tt.resp))
			if got := err == nil; got != tt.ok {
				t.Fatalf("got ok=%v (%v), want ok=%v", got, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrWrongAnswer) {
				t.Errorf("got %v, want an error wrapping ErrWrongAnswer", err)
			}
		})
	}
}

func TestStoreGetAllocs(t *testing.T) {
	s := NewStore()
	req := []byte("account=acct-9")
	if n := testing.AllocsPerRun(100, func() { s.Get(req) }); n > 1 {
		t.Errorf("Get: got %v allocations, want at most 1 (the answer)", n)
	}
}

// TestBankGetAnswersAsStoreGet: the floor-get's work answers every
// account as the peers' Store.Get does, and as rpcserver does for a
// 5000 ms budget, so that the driver's check and the answer's length are
// those of the other rows.
func TestBankGetAnswersAsStoreGet(t *testing.T) {
	get, s := BankGet()(), NewStore()
	dst := []byte("head:")
	for i, req := range Requests() {
		want, err := s.Get(req)
		if err != nil {
			t.Fatal(err)
		}
		got := get(dst[:5], req)
		if string(got) != "head:"+string(want) {
			t.Fatalf("account %d: got %q, want %q after the head", i, got, want)
		}
	}
	if got := get(nil, []byte("acct-7")); Check([]byte("account=acct-7"), got) == nil {
		t.Errorf("a refused get: got %q, which Check takes for an answer", got)
	}
}

func TestBankGetAllocs(t *testing.T) {
	get := BankGet()()
	req, dst := []byte("account=acct-9"), make([]byte, 0, 128)
	if n := testing.AllocsPerRun(100, func() { get(dst, req) }); n > 0 {
		t.Errorf("got %v allocations, want none: rpcserver's get allocates nothing either", n)
	}
}
