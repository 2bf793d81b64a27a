package fault_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/fault"
)

type kind uint8

const (
	late kind = iota + 1
	unavailable
	drain
)

var grammar = fault.Grammar[kind]{
	Pkg:       "wire",
	Names:     map[kind]string{late: "late", unavailable: "unavailable", drain: "drain"},
	WantKinds: "late, unavailable or drain",
	Keys:      []string{"colour"},
}

// colour is a transport's own key, as grpcwire's code and headers are.
func colour(dst *string) func(k, v string) (bool, error) {
	return func(k, v string) (bool, error) {
		if k != "colour" {
			return false, nil
		}
		if v == "" {
			return true, errors.New("wire: no colour")
		}
		*dst = v
		return true, nil
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    fault.Spec[kind]
		colour  string
		wantErr string // the whole error; empty for success
	}{
		{in: "kind=late method=get count=2 delay=150ms", want: fault.Spec[kind]{Kind: late, Method: "get", Count: 2, Delay: 150 * time.Millisecond}},
		{in: "kind=unavailable retry_after=never", want: fault.Spec[kind]{Kind: unavailable, RetryAfter: fault.RetryNever}},
		{in: "colour=red kind=drain", want: fault.Spec[kind]{Kind: drain}, colour: "red"},
		{in: "", wantErr: `wire: fault "": kind is required`},
		{in: "kind=boom", wantErr: `wire: fault "kind=boom": unknown kind "boom" (want late, unavailable or drain)`},
		{in: "kind=late size=3", wantErr: `wire: fault "kind=late size=3": unknown key "size" (want kind, method, count, delay, retry_after, colour)`},
		{in: "kind=late colour=", wantErr: `wire: no colour`},
		{in: "kind=late retry_after=1s", wantErr: `wire: fault "kind=late retry_after=1s": retry_after is only for kind=unavailable`},
		{in: "kind=late count", wantErr: `wire: fault "kind=late count": "count" is not key=value`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var c string
			got, err := grammar.Parse(tt.in, colour(&c))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("Parse(%q) error = %v, want %s", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" || c != tt.colour {
				t.Errorf("Parse(%q) colour %q, want %q; (-want +got):\n%s", tt.in, c, tt.colour, diff)
			}
			if again, err := grammar.Parse(grammar.Format(got), nil); err != nil || again != got {
				t.Errorf("Parse(Format(%+v)) = %+v, %v; want it back", got, again, err)
			}
		})
	}
}

func TestName(t *testing.T) {
	if got := grammar.Name(late); got != "late" {
		t.Errorf("Name(late) = %q, want late", got)
	}
	if got := grammar.Name(99); got != "unknown_fault_99" {
		t.Errorf("Name(99) = %q, want unknown_fault_99", got)
	}
}

// rule is a transport's rule, for the table: a name and its scope.
type rule struct {
	name, method string
	count        int
}

func (r rule) String() string                    { return r.name }
func (r rule) Scope() (method string, count int) { return r.method, r.count }

func TestCheckMethod(t *testing.T) {
	methods := []string{"get", "debit", "echo"}
	for _, m := range []string{"", "get", "echo"} {
		if err := grammar.CheckMethod(rule{name: "r", method: m}, methods); err != nil {
			t.Errorf("CheckMethod(%q) = %v, want nil", m, err)
		}
	}
	put := rule{name: "kind=late method=put", method: "put"}
	err := grammar.CheckMethod(put, methods)
	var me *fault.MethodError
	want := `wire: fault "kind=late method=put": unknown method "put" (want get, debit or echo)`
	if !errors.As(err, &me) || err.Error() != want || me.Rule != put {
		t.Errorf("CheckMethod(put) = %v, want a *MethodError %s", err, want)
	}
}

// TestTable: the first unspent rule that matches fires, a spent one no
// longer does, and a rule for a method the handler lacks is refused.
func TestTable(t *testing.T) {
	var log bytes.Buffer
	lg := slog.New(slog.NewTextHandler(&log, nil))
	tab := fault.NewTable[rule]("wire", []string{"get", "debit"})
	if !tab.Empty() {
		t.Fatal("new Table not empty")
	}
	for _, r := range []rule{{name: "debit-once", method: "debit", count: 1}, {name: "drain"}} {
		if err := tab.Add(r); err != nil {
			t.Fatalf("Add(%v): %v", r, err)
		}
	}
	if err := tab.Set(rule{name: "any"}, lg); err != nil || !strings.Contains(log.String(), "FAULT_SET fault=any") {
		t.Fatalf("Set(any) = %v, log %q; want nil and a FAULT_SET event", err, log.String())
	}
	var me *fault.MethodError
	if err := tab.Add(rule{name: "put", method: "put"}); !errors.As(err, &me) {
		t.Errorf("Add(put) = %v, want a *MethodError", err)
	}
	noDrain := func(r rule) bool { return r.name != "drain" }
	var got []string
	for _, m := range []string{"debit", "debit", "get"} {
		r, ok := tab.Take(m, noDrain)
		got = append(got, m+"="+r.name+map[bool]string{false: "!"}[ok])
	}
	if r, ok := tab.Take("get", nil); !ok || r.name != "drain" {
		t.Errorf("Take(get, nil) = %v, %v; want drain, true", r, ok)
	}
	want := "debit=debit-once debit=any get=any"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("got %s, want %s", g, want)
	}
	tab.Clear()
	if _, ok := tab.Take("debit", nil); ok || !tab.Empty() {
		t.Errorf("after Clear: Take fired %v, Empty %v; want nothing, empty", ok, tab.Empty())
	}
}
