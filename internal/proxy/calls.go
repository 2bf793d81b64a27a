package proxy

import (
	"strconv"
	"time"

	"github.com/rpcbench/rpcbench/internal/grpcwire"
)

// Logical calls: the proxy sees attempts, streams, and a retrying or
// hedging client makes several for one call of its code. Group ties them
// together by this rule, in the order the attempts came:
//
//  1. Attempts with the same idempotency-key metadata and method are one
//     call, whatever else they say.
//  2. Otherwise an attempt whose grpc-previous-rpc-attempts is N > 0
//     (gRPC's retry and hedging set it on every attempt after the
//     first) continues the latest call of the same method, with the
//     same request bytes, that has N attempts so far and is still within
//     the deadline its first attempt carried (grpc-timeout; a minute
//     when it carried none). An attempt refused before its body came
//     has no request bytes to compare, and matches on the rest.
//  3. An attempt with neither, of the same method, that comes within
//     transparentWindow of the end of the latest call's last attempt,
//     refused unprocessed (REFUSED_STREAM, GOAWAY below it) and never
//     forwarded, continues that call: a transparent retry, which
//     grpc-go sends without counting it in grpc-previous-rpc-attempts.
//  4. Any other attempt starts a call.
//
// Where it can be wrong: a client that retries in its own code, with a
// new call and no key, makes calls of one attempt each, though the
// user's code made one call; a new call of the same method made right
// after a refusal, by other code, is taken for its transparent retry;
// two calls in flight at once with the same
// method and bytes, both retrying, may have their retries swapped (each
// is still counted once); a client that sets grpc-previous-rpc-attempts
// wrongly is grouped as it says.
const noDeadline = time.Minute

// transparentWindow is how soon after a refusal an attempt with no
// retry count is taken for the refused call's transparent retry: the
// stacks send it at once, without backoff.
const transparentWindow = time.Second

// Call is one logical call: its attempts, in the order they came.
type Call struct {
	// ID numbers calls in the order their first attempts came, from 1.
	ID       int
	Method   string
	Key      string
	Attempts []Attempt
	// By says which rule tied the attempts: "key", "previous" or
	// "transparent" or "single" (one attempt, or attempts with nothing
	// to tie them).
	By string
}

// Group ties attempts into logical calls by the rule above. Attempts
// come in arrival order (Proxy.Attempts). callOf[i] is the ID of
// attempts[i]'s call.
func Group(attempts []Attempt) (calls []Call, callOf []int) {
	var cs []*Call
	byKey := map[[2]string]*Call{}
	callOf = make([]int, len(attempts))
	add := func(i int, c *Call, by string) {
		c.Attempts = append(c.Attempts, attempts[i])
		c.By = by
		callOf[i] = c.ID
	}
	for i, a := range attempts {
		if a.Key != "" {
			k := [2]string{a.Method, a.Key}
			if c := byKey[k]; c != nil {
				add(i, c, "key")
				continue
			}
			c := &Call{ID: len(cs) + 1, Method: a.Method, Key: a.Key}
			byKey[k] = c
			cs = append(cs, c)
			add(i, c, "single")
			continue
		}
		if n, err := strconv.Atoi(a.Previous); err == nil && n > 0 {
			if c := continued(cs, a, n); c != nil {
				add(i, c, "previous")
				continue
			}
		} else if c := transparent(cs, a); c != nil {
			add(i, c, "transparent")
			continue
		}
		c := &Call{ID: len(cs) + 1, Method: a.Method}
		cs = append(cs, c)
		add(i, c, "single")
	}
	calls = make([]Call, len(cs))
	for i, c := range cs {
		calls[i] = *c
	}
	return calls, callOf
}

// continued finds the latest keyless call a continues: same method and
// request bytes (when both are known), n attempts so far, and a within
// its first attempt's deadline.
func continued(calls []*Call, a Attempt, n int) *Call {
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		first := c.Attempts[0]
		if c.Key != "" || c.Method != a.Method || len(c.Attempts) != n {
			continue
		}
		if first.Body != "" && a.Body != "" && first.Body != a.Body {
			continue
		}
		deadline := noDeadline
		if d, err := grpcwire.ParseTimeout(first.Timeout); err == nil {
			deadline = d
		}
		if a.Start.Sub(first.Start) > deadline {
			continue
		}
		return c
	}
	return nil
}

// transparent finds the keyless call a is a transparent retry of: its
// latest attempt was refused unprocessed and unforwarded, ended at most
// transparentWindow before a started, and is of the same method.
func transparent(calls []*Call, a Attempt) *Call {
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		if c.Method != a.Method || c.Key != "" {
			continue
		}
		last := c.Attempts[len(c.Attempts)-1]
		if last.Forwarded || last.Client != "RST_REFUSED_STREAM" && last.Client != "GOAWAY" {
			return nil // the latest call of the method was not refused
		}
		if gap := a.Start.Sub(last.Ended); gap < 0 || gap > transparentWindow {
			return nil
		}
		return c
	}
	return nil
}
