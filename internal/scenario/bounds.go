package scenario

import (
	"fmt"
	"math"
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/report"
)

// Bound checks. A measured time varies between runs, so it is recorded as
// a volatile field; the bound it was checked against is stable, and so is
// the verdict: a run that breaks the bound fails, and its line says by how
// much. For key the line shows key~=<measured> next to key<=<upper bound>
// and key>=<lower bound>, so that a reader sees each bound beside the
// value it was checked on.

// Within records got as the volatile key~= and hi as the bound key<=, and
// fails the scenario unless got <= hi.
func Within(t *T, key string, got, hi time.Duration) bool {
	return Between(t, key, got, -1, hi)
}

// Between records got as the volatile key~= and the bounds as key>= and
// key<=, and fails the scenario unless lo <= got <= hi. A negative bound is
// absent: it is neither recorded nor checked.
func Between(t *T, key string, got, lo, hi time.Duration) bool {
	t.Volatile(key, Millis(got))
	if lo >= 0 {
		t.Fields = append(t.Fields, report.Field{Key: key, Value: Millis(lo), Kind: report.LowerBound})
	}
	if hi >= 0 {
		t.Fields = append(t.Fields, report.Field{Key: key, Value: Millis(hi), Kind: report.Bound})
	}
	switch {
	case lo >= 0 && got < lo:
		t.Failures = append(t.Failures, fmt.Sprintf("%s=%v, want at least %v", key, got, lo))
		return false
	case hi >= 0 && got > hi:
		t.Failures = append(t.Failures, fmt.Sprintf("%s=%v, want at most %v", key, got, hi))
		return false
	}
	return true
}

// AtLeast records got as the volatile key~= and lo as the bound key>=,
// and fails the scenario, saying why, unless got >= lo.
func AtLeast[N int | int64](t *T, key string, got, lo N, why string) bool {
	t.Volatile(key, got)
	t.Fields = append(t.Fields, report.Field{Key: key, Value: fmt.Sprint(lo), Kind: report.LowerBound})
	if got < lo {
		t.Failures = append(t.Failures, fmt.Sprintf("%s=%v, want at least %v: %s", key, got, lo, why))
		return false
	}
	return true
}

// Budget converts a budgetMs from the wire to a duration, for the bound
// checks.
func Budget(ms uint32) time.Duration { return time.Duration(ms) * time.Millisecond }

// Pauses checks the pause after each attempt but the last against its
// bounds (internal/client/POLICY.md, "Retry policy"): the nominal pause spread by ±Jitter, or
// exactly the nominal pause without jitter. keyFormat makes the key of
// the pause after attempt n, e.g. "pause%d".
func Pauses(t *T, keyFormat string, r client.Result, cfg client.Config) {
	for i, a := range r.Log[:max(0, len(r.Log)-1)] {
		n := i + 1
		key := fmt.Sprintf(keyFormat, n)
		// The nominal pause after attempt n is
		// min(BackoffInitial × 2^(n-1), BackoffMax).
		nominal := min(cfg.BackoffInitial<<(n-1), cfg.BackoffMax)
		if cfg.Jitter == 0 {
			Expect(t, key, a.Backoff, nominal)
			continue
		}
		spread := func(f float64) time.Duration { return time.Duration(math.Round(float64(nominal) * f)) }
		Between(t, key, a.Backoff, spread(1-cfg.Jitter), spread(1+cfg.Jitter))
	}
}

// AtMost records got as the volatile key~= and hi as the bound key<=,
// and fails the scenario, saying why, unless got <= hi.
func AtMost[N int | int64](t *T, key string, got, hi N, why string) bool {
	t.Volatile(key, got)
	t.Fields = append(t.Fields, report.Field{Key: key, Value: fmt.Sprint(hi), Kind: report.Bound})
	if got > hi {
		t.Failures = append(t.Failures, fmt.Sprintf("%s=%v, want at most %v: %s", key, got, hi, why))
		return false
	}
	return true
}
