package workload

import (
	"bytes"
	"errors"
	"testing"
)

func TestEchoRequests(t *testing.T) {
	reqs := EchoRequests(EchoSize)
	if len(reqs) != Accounts {
		t.Fatalf("got %d requests, want %d", len(reqs), Accounts)
	}
	for i, r := range reqs {
		if len(r) != EchoSize {
			t.Errorf("request %d: got %d bytes, want %d", i, len(r), EchoSize)
		}
		for j := range i {
			if bytes.Equal(r, reqs[j]) {
				t.Errorf("requests %d and %d are equal, want every one distinct", j, i)
			}
		}
	}
	if got, want := string(reqs[17][:8]), "echo-17 "; got != want {
		t.Errorf("request 17 starts %q, want %q", got, want)
	}
}

func TestCheckEcho(t *testing.T) {
	reqs := EchoRequests(64)
	req := reqs[5]
	tests := []struct {
		name string
		resp []byte
		ok   bool
	}{
		{"same bytes", bytes.Clone(req), true},
		{"another call's payload", reqs[6], false},
		{"truncated", req[:63], false},
		{"longer", append(bytes.Clone(req), 'x'), false},
		{"one byte changed", append(bytes.Clone(req[:40]), append([]byte{'#'}, req[41:]...)...), false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckEcho(req, tt.resp)
			if tt.ok && err != nil {
				t.Errorf("got %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, ErrWrongAnswer) {
				t.Errorf("got %v, want ErrWrongAnswer", err)
			}
		})
	}
}
