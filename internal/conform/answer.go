package conform

import (
	"fmt"
	"strconv"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// okAnswer is the payload of an OK answer to get or debit (SPEC.md,
// Business methods): exactly these five fields.
type okAnswer struct {
	Account  string
	Balance  int64
	Budget   uint32
	Exec     int64
	Replayed bool
}

// parseOK decodes an OK payload. A missing, unknown or malformed field is
// an error, never a zero value.
func parseOK(payload []byte) (okAnswer, error) {
	var a okAnswer
	fs, err := serverapi.ParseFields(payload)
	if err != nil {
		return a, fmt.Errorf("conform: OK payload %q: %w", payload, err)
	}
	bad := func(k string) error { return fmt.Errorf("conform: OK payload %q: field %s=%q", payload, k, fs[k]) }
	for _, k := range []string{"account", "balance", "budget", "exec", "replayed"} {
		if _, ok := fs[k]; !ok {
			return a, fmt.Errorf("conform: OK payload %q has no field %s", payload, k)
		}
	}
	if len(fs) != 5 {
		return a, fmt.Errorf("conform: OK payload %q has fields beyond account, balance, budget, exec and replayed", payload)
	}
	a.Account = fs["account"]
	if a.Balance, err = strconv.ParseInt(fs["balance"], 10, 64); err != nil {
		return a, bad("balance")
	}
	b, err := strconv.ParseUint(fs["budget"], 10, 32)
	if err != nil {
		return a, bad("budget")
	}
	a.Budget = uint32(b)
	if a.Exec, err = strconv.ParseInt(fs["exec"], 10, 64); err != nil {
		return a, bad("exec")
	}
	switch fs["replayed"] {
	case "true":
		a.Replayed = true
	case "false":
	default:
		return a, bad("replayed")
	}
	return a, nil
}

// sameExceptReplayed reports whether a and b are the same answer but for
// the replayed flag: what SPEC.md promises a replay.
func sameExceptReplayed(a, b okAnswer) bool {
	a.Replayed, b.Replayed = false, false
	return a == b
}

func (a okAnswer) String() string {
	return fmt.Sprintf("account=%s balance=%d budget=%d exec=%d replayed=%t", a.Account, a.Balance, a.Budget, a.Exec, a.Replayed)
}
