package scenario

import (
	"fmt"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// GetCall is an idempotent get of account.
func GetCall(account string) client.Call {
	return client.Call{Method: bank.MethodGet, Idempotent: true, Payload: []byte("account=" + account)}
}

// DebitCall is a debit of amount from account, keyed by key ("" for a
// keyless, non-idempotent debit).
func DebitCall(account string, amount int, key string) client.Call {
	return client.Call{Method: bank.MethodDebit, Key: key, Payload: fmt.Appendf(nil, "account=%s amount=%d", account, amount)}
}

// PayloadFields parses a result's payload; a payload that is not key=value text
// yields an empty set.
func PayloadFields(r client.Result) serverapi.Fields {
	fs, err := serverapi.ParseFields(r.Payload)
	if err != nil {
		return serverapi.Fields{}
	}
	return fs
}

// Brief renders a result as its status followed by the chosen payload
// fields, e.g. "OK account=acct-B balance=1000".
func Brief(r client.Result, keys ...string) string {
	fs := PayloadFields(r)
	parts := []string{r.Status.String()}
	for _, k := range keys {
		if v, ok := fs[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

// AttemptLog renders every attempt of a result: "a1 TIMEOUT id=1 ..., a2 ...".
func AttemptLog(r client.Result) string {
	parts := make([]string, len(r.Log))
	for i, a := range r.Log {
		parts[i] = fmt.Sprintf("a%d %v", i+1, a)
	}
	return strings.Join(parts, ", ")
}

// Outcomes renders what each attempt met, without the values that vary
// between runs: "TIMEOUT,RESPONSE/OK".
func Outcomes(r client.Result) string {
	parts := make([]string, len(r.Log))
	for i, a := range r.Log {
		parts[i] = a.Outcome.String()
		if a.Outcome == client.OutcomeResponse {
			parts[i] += "/" + a.Status.String()
		}
	}
	return strings.Join(parts, ",")
}

// WaitFor polls cond until it holds or timeout passes, and reports
// whether it held. It is for counters that change on an event this
// process cannot otherwise observe, such as a late response being dropped
// by the client's reader.
func WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Slack is the allowance on top of a call's deadline for it to return
// on a loaded 2-core machine.
const Slack = 250 * time.Millisecond

// FieldOf returns the value of key in a key=value payload, "" when the
// payload has none or is not key=value text.
func FieldOf(payload []byte, key string) string {
	fs, err := serverapi.ParseFields(payload)
	if err != nil {
		return ""
	}
	return fs[key]
}
