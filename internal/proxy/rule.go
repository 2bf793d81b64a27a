package proxy

import (
	"fmt"
	"math/rand/v2"
	"path"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/net/http2"

	"github.com/rpcbench/rpcbench/internal/fault"
)

// Kind is what a rule does to the calls it takes.
type Kind uint8

// The fault kinds. Those before forwarding never let the upstream see
// the call; the others forward it and lose, change or hold its answer.
const (
	// Unavailable answers UNAVAILABLE, trailers-only, and forwards
	// nothing (retry_after sets grpc-retry-pushback-ms).
	Unavailable Kind = iota + 1
	// Refuse resets the stream REFUSED_STREAM and forwards nothing: a
	// refusal that says nothing was processed.
	Refuse
	// Drop forwards the call, waits for the upstream's whole answer and
	// resets the client's stream instead of sending it (code=, default
	// CANCEL).
	Drop
	// Close forwards the call, waits for the upstream's whole answer and
	// closes the client's connection instead (a FIN).
	Close
	// UnavailableAfter forwards the call and, once the upstream
	// answered, answers UNAVAILABLE in its place.
	UnavailableAfter
	// NoReply forwards the call and never answers it: the upstream's
	// answer is held until the client gives up.
	NoReply
	// Delay forwards the call after delay=.
	Delay
	// GoAway answers the call's stream with GOAWAY whose last stream is
	// below it (NO_ERROR), unforwarded: the client may send it again on
	// another connection. The connection takes no new stream after it,
	// and is closed once the streams below it have ended.
	GoAway
	// GoAwayCover forwards the call, waits for the upstream's whole
	// answer, then sends the client GOAWAY whose last stream covers the
	// call (it may have been processed) and closes the connection,
	// unanswered.
	GoAwayCover
	// Reset forwards the call, waits for the upstream's whole answer and
	// resets the client's connection (TCP RST) instead.
	Reset
	// CutData forwards the call and passes on the upstream's HEADERS
	// and half of its first DATA frame, then closes the client's
	// connection.
	CutData
	// Late forwards the call, holds the upstream's whole answer and
	// sends it delay= after it came: an answer after the caller's
	// deadline when delay= is longer.
	Late
)

var grammar = fault.Grammar[Kind]{
	Pkg: "proxy",
	Names: map[Kind]string{Unavailable: "unavailable", Refuse: "refuse", Drop: "drop", Close: "close",
		UnavailableAfter: "unavailable_after", NoReply: "noreply", Delay: "delay", GoAway: "goaway_below",
		GoAwayCover: "goaway_cover", Reset: "reset", CutData: "cut_data", Late: "late"},
	WantKinds: "unavailable, refuse, goaway_below, drop, close, reset, goaway_cover, cut_data, unavailable_after, noreply, late or delay",
	Keys:      []string{"code", "skip", "every", "p", "seed"},
}

// Rule is one fault: its kind, the methods it takes (a pattern of
// "pkg.Service/Method", * for any part: "shop.v1.Orders/*"), which of
// the calls that match it takes, and its kind's settings. Of the
// matching calls it passes the first skip= untouched, then takes every
// every=-th (default each), or each with probability p= (from a
// generator seeded by seed=, default 1, so that a run can be repeated),
// until it has taken count= (0: no end).
type Rule struct {
	Kind   Kind
	spec   fault.Spec[Kind]
	Code   http2.ErrCode // Drop's reset code
	Skip   int
	Every  int
	P      float64
	Seed   int64
	rng    *rand.Rand
	seen   int // matching calls so far
	taken  int
	extras string // the keys above as given, for String
}

// ParseRule parses a rule in the fault grammar of rpcserver's -fault and
// -grpc-fault: "kind=drop method=shop.v1.Orders/Place count=1 code=CANCEL".
func ParseRule(s string) (*Rule, error) {
	r := &Rule{Code: http2.ErrCodeCancel, Seed: 1}
	var extras []string
	spec, err := grammar.Parse(s, func(k, v string) (bool, error) {
		switch k {
		case "code":
			c, ok := errCodes[strings.ToUpper(v)]
			if !ok {
				return true, grammar.Errorf(s, "code %q: want an RST_STREAM code (%s)", v, strings.Join(codeNames(), ", "))
			}
			r.Code = c
			return true, nil
		case "skip", "every", "seed":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || k == "every" && n == 0 || n > 1<<31 {
				return true, grammar.Errorf(s, "%s %q: want a whole number%s", k, v, map[bool]string{true: " from 1", false: " from 0"}[k == "every"])
			}
			switch k {
			case "skip":
				r.Skip = int(n)
			case "every":
				r.Every = int(n)
			default:
				r.Seed = n
			}
			extras = append(extras, k+"="+v)
			return true, nil
		case "p":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f > 0 && f <= 1) {
				return true, grammar.Errorf(s, "p %q: want a probability above 0, at most 1", v)
			}
			r.P = f
			extras = append(extras, k+"="+v)
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	r.extras = strings.Join(extras, " ")
	if _, err := path.Match(spec.Method, ""); err != nil {
		return nil, grammar.Errorf(s, "method %q is no pattern: %v", spec.Method, err)
	}
	switch {
	case (spec.Kind == Delay || spec.Kind == Late) && spec.Delay <= 0:
		return nil, grammar.Errorf(s, "kind=%s needs delay=DURATION", grammar.Name(spec.Kind))
	case r.P > 0 && r.Every > 0:
		return nil, grammar.Errorf(s, "every and p both choose calls: give one")
	case strings.Contains(s, "seed=") && r.P == 0:
		return nil, grammar.Errorf(s, "seed is for p")
	case strings.Contains(s, "code=") && spec.Kind != Drop:
		return nil, grammar.Errorf(s, "code is only for kind=drop")
	}
	r.Kind, r.spec = spec.Kind, spec
	if r.P > 0 {
		r.rng = rand.New(rand.NewPCG(uint64(r.Seed), 0))
	}
	return r, nil
}

// String is the rule in the grammar it was parsed from.
func (r *Rule) String() string {
	s := grammar.Format(r.spec)
	if r.Kind == Drop && r.Code != http2.ErrCodeCancel {
		s += " code=" + r.Code.String()
	}
	if r.extras != "" {
		s += " " + r.extras
	}
	return s
}

// matches reports whether the rule takes a call of method, "pkg.Service/Method".
func (r *Rule) matches(method string) bool { return MatchMethod(r.spec.Method, method) }

// MatchMethod reports whether pattern takes a call of method,
// "pkg.Service/Method": "" takes any; a pattern with a / is matched as
// path.Match matches ("shop.v1.Orders/*"); a bare name takes that
// method of any service.
func MatchMethod(pattern, method string) bool {
	if pattern == "" {
		return true
	}
	if ok, _ := path.Match(pattern, method); ok {
		return true
	}
	return !strings.Contains(pattern, "/") && strings.HasSuffix(method, "/"+pattern)
}

// CheckPattern says what is wrong with a method pattern, nil if nothing.
func CheckPattern(pattern string) error {
	if _, err := path.Match(pattern, ""); err != nil {
		return fmt.Errorf("method %q is no pattern: %v", pattern, err)
	}
	return nil
}

// rules are a proxy's rules; the first unspent one that matches a call
// takes it.
type rules struct {
	mu   sync.Mutex
	list []*Rule
}

func (rs *rules) take(method string) *Rule {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.list {
		if !r.matches(method) || r.spec.Count > 0 && r.taken >= r.spec.Count {
			continue
		}
		r.seen++
		if !r.chooses() {
			continue
		}
		r.taken++
		return r
	}
	return nil
}

// chooses reports whether the rule takes the matching call it has just
// counted in seen.
func (r *Rule) chooses() bool {
	n := r.seen - r.Skip
	switch {
	case n <= 0:
		return false
	case r.Every > 0:
		return n%r.Every == 0
	case r.P > 0:
		return r.rng.Float64() < r.P
	}
	return true
}

var errCodes = func() map[string]http2.ErrCode {
	m := map[string]http2.ErrCode{}
	for c := http2.ErrCodeNo; c <= http2.ErrCodeHTTP11Required; c++ {
		m[c.String()] = c
		m[strconv.Itoa(int(c))] = c
	}
	return m
}()

func codeNames() []string {
	var out []string
	for c := http2.ErrCodeNo; c <= http2.ErrCodeHTTP11Required; c++ {
		out = append(out, c.String())
	}
	return out
}

// pushback is the grpc-retry-pushback-ms an Unavailable rule sends
// ("-1": do not retry), and whether it sends one.
func (r *Rule) pushback() (string, bool) {
	if r.spec.RetryAfter == 0 {
		return "", false
	}
	return strconv.FormatInt(fault.RetryAfterMs(r.spec.RetryAfter), 10), true
}
