// Package fault is the fault rules rpcserver's transports share: their
// text form and its common keys, and the table that says which rule
// fires for a request. Each transport keeps its own kinds and what they
// do.
package fault

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Spec is what every transport's rule holds, whatever its kind: the
// common keys of the text form.
type Spec[K ~uint8] struct {
	Kind K
	// Method restricts the rule to one business method; empty matches
	// every one.
	Method string
	// Count is how many matching requests the rule fires on before it
	// is spent; zero means every matching request.
	Count int
	// Delay is a kind's pause or extra lateness; its transport says
	// which kinds use it.
	Delay time.Duration
	// RetryAfter is the retry hint an unavailable answer carries: zero
	// sends none, a positive duration sends RetryAfterMs of it, and
	// RetryNever "do not retry". Parse accepts it with the kind named
	// "unavailable" only.
	RetryAfter time.Duration
}

// RetryNever is Spec.RetryAfter for a hint that says "do not retry"; its
// text form is retry_after=never.
const RetryNever time.Duration = -1

// RetryAfterMs is the hint for d in whole milliseconds, rounded up so
// that a client honouring it never retries early, or -1 for RetryNever.
func RetryAfterMs(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// Grammar is one transport's dialect of the text form: space-separated
// key=value pairs with kind required, the common keys kind, method,
// count, delay and retry_after, and the transport's own keys.
type Grammar[K ~uint8] struct {
	// Pkg names the transport's package; every error starts with it:
	// "server: fault ...".
	Pkg string
	// Names are the kinds' names, for kind=NAME.
	Names map[K]string
	// WantKinds is how an unknown kind's error lists the names, after
	// "want ".
	WantKinds string
	// Keys are the transport's own keys, as an unknown key's error lists
	// them after the common ones.
	Keys []string
}

// Name returns k's name, or unknown_fault_N for a kind g does not know.
func (g *Grammar[K]) Name(k K) string {
	if n, ok := g.Names[k]; ok {
		return n
	}
	return fmt.Sprintf("unknown_fault_%d", uint8(k))
}

// Errorf returns an error about the rule s, in the words every error of
// g uses: "PKG: fault "S": " and the text.
func (g *Grammar[K]) Errorf(s, format string, a ...any) error {
	return fmt.Errorf("%s: fault %q: %s", g.Pkg, s, fmt.Sprintf(format, a...))
}

// Parse parses the rule s. A key that is not a common one goes to key,
// which reports whether it knows it and any error in its value (made by
// Errorf); key may be nil when the transport has no keys of its own.
// kind is required, and retry_after (a Go duration > 0, or never) is
// only for the kind named "unavailable".
func (g *Grammar[K]) Parse(s string, key func(k, v string) (bool, error)) (Spec[K], error) {
	var f Spec[K]
	for _, field := range strings.Fields(s) {
		k, v, ok := strings.Cut(field, "=")
		if !ok {
			return f, g.Errorf(s, "%q is not key=value", field)
		}
		switch k {
		case "kind":
			for kind, name := range g.Names {
				if name == v {
					f.Kind = kind
				}
			}
			if f.Kind == 0 {
				return f, g.Errorf(s, "unknown kind %q (want %s)", v, g.WantKinds)
			}
		case "method":
			f.Method = v
		case "count":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return f, g.Errorf(s, "count %q is not a whole number >= 0", v)
			}
			f.Count = n
		case "delay":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return f, g.Errorf(s, "delay %q is not a duration >= 0", v)
			}
			f.Delay = d
		case "retry_after":
			if v == "never" {
				f.RetryAfter = RetryNever
				break
			}
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return f, g.Errorf(s, "retry_after %q is neither a duration > 0 nor never", v)
			}
			f.RetryAfter = d
		default:
			if key != nil {
				if ok, err := key(k, v); err != nil {
					return f, err
				} else if ok {
					break
				}
			}
			return f, g.Errorf(s, "unknown key %q (want %s)", k, strings.Join(append([]string{"kind", "method", "count", "delay", "retry_after"}, g.Keys...), ", "))
		}
	}
	switch {
	case f.Kind == 0:
		return f, g.Errorf(s, "kind is required")
	case f.RetryAfter != 0 && g.Names[f.Kind] != "unavailable":
		return f, g.Errorf(s, "retry_after is only for kind=unavailable")
	}
	return f, nil
}

// Format returns f's canonical text form, which Parse reads back: kind
// first, then each common key that is set.
func (g *Grammar[K]) Format(f Spec[K]) string {
	s := "kind=" + g.Name(f.Kind)
	if f.Method != "" {
		s += " method=" + f.Method
	}
	if f.Count > 0 {
		s += " count=" + strconv.Itoa(f.Count)
	}
	if f.Delay > 0 {
		s += " delay=" + f.Delay.String()
	}
	switch {
	case f.RetryAfter < 0:
		s += " retry_after=never"
	case f.RetryAfter > 0:
		s += " retry_after=" + f.RetryAfter.String()
	}
	return s
}

// MethodError is the error for a rule naming a method the handler does
// not serve: the rule could never fire, which is almost always a typo
// the user would otherwise not hear of.
type MethodError struct {
	// Pkg names the transport's package, which starts the message.
	Pkg string
	// Rule is the transport's rule (a server.Fault, a grpcwire.Fault).
	Rule Rule
	// Method is the method it names.
	Method string
	// Methods are the handler's business methods, the ones a rule may
	// name.
	Methods []string
}

func (e *MethodError) Error() string {
	return fmt.Sprintf("%s: fault %q: unknown method %q (want %s)", e.Pkg, e.Rule.String(), e.Method, orList(e.Methods))
}

// Rule is a transport's rule as a Table and a MethodError see it.
type Rule interface {
	// String returns the rule's canonical text form.
	String() string
	// Scope returns the method the rule is for, "" for every one, and
	// how many matching requests it fires on, 0 for every one.
	Scope() (method string, count int)
}

// CheckMethod returns a *MethodError if r names a method that is not
// among methods, the business methods of the handler it is meant for.
// Parse cannot tell, knowing no handler: a Table checks every rule it is
// given, and a program that parses rules before it has a handler checks
// them here.
func (g *Grammar[K]) CheckMethod(r Rule, methods []string) error {
	return checkMethod(g.Pkg, r, methods)
}

func checkMethod(pkg string, r Rule, methods []string) error {
	if m, _ := r.Scope(); m != "" && !slices.Contains(methods, m) {
		return &MethodError{Pkg: pkg, Rule: r, Method: m, Methods: slices.Clone(methods)}
	}
	return nil
}

// orList returns "a, b or c".
func orList(words []string) string {
	switch len(words) {
	case 0:
		return "none"
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
