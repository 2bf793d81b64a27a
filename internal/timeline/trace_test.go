package timeline

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const traceLine1 = `{"client":1,"method":"debit","key":"k1","attempt":1,"call":1,"id":1,"start":"2026-12-01T02:35:21.3735Z","end":"2026-12-01T02:35:21.6736Z","outcome":"TIMEOUT","class":"OUTCOME_UNKNOWN","status":"","budget_ms":299,"backoff_ms":16,"addr":"127.0.0.1:1","err":"context deadline exceeded"}`

func TestReadTrace(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	first := Attempt{Client: 1, Method: "debit", Key: "k1", Attempt: 1, Call: 1, ID: 1,
		Start: at("2026-12-01T02:35:21.3735Z"), End: at("2026-12-01T02:35:21.6736Z"),
		Outcome: "TIMEOUT", Class: "OUTCOME_UNKNOWN", BudgetMs: 299, BackoffMs: 16, Addr: "127.0.0.1:1", Err: "context deadline exceeded"}
	// The optional keys left out.
	minimal := `{"client":2,"method":"get","attempt":1,"call":3,"id":0,"start":"2026-12-01T02:35:21Z","end":"2026-12-01T02:35:21Z","outcome":"CONNECT_FAILED","class":"NOT_SENT","budget_ms":300}`
	second := Attempt{Client: 2, Method: "get", Attempt: 1, Call: 3, Start: at("2026-12-01T02:35:21Z"), End: at("2026-12-01T02:35:21Z"),
		Outcome: "CONNECT_FAILED", Class: "NOT_SENT", BudgetMs: 300}
	tests := []struct {
		name    string
		in      string
		want    []Attempt
		wantErr string // substring; "" for none
	}{
		{"two lines and a blank one", traceLine1 + "\n\n" + minimal + "\n", []Attempt{first, second}, ""},
		{"empty", "", nil, ""},
		{"unknown key", traceLine1 + "\n" + strings.Replace(minimal, `"client":2`, `"client":2,"colour":"red"`, 1), []Attempt{first}, `trace line 2: json: unknown field "colour"`},
		{"missing keys", strings.Replace(minimal, `"outcome":"CONNECT_FAILED","class":"NOT_SENT",`, "", 1), nil, "trace line 1: missing outcome, class"},
		{"end before start", strings.Replace(minimal, `"end":"2026-12-01T02:35:21Z"`, `"end":"2026-12-01T02:35:20Z"`, 1), nil, "end before start"},
		{"client 0", strings.Replace(minimal, `"client":2`, `"client":0`, 1), nil, "client 0, want 1 or more"},
		{"not JSON", "CASE x PASS\n", nil, "trace line 1: invalid character"},
		{"bad time", strings.Replace(minimal, `"start":"2026-12-01T02:35:21Z"`, `"start":"yesterday"`, 1), nil, "trace line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadTrace(strings.NewReader(tt.in))
			if tt.wantErr == "" && err != nil {
				t.Fatalf("ReadTrace: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("ReadTrace error %v, want one containing %q", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("attempts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAttemptUnknown(t *testing.T) {
	tests := []struct {
		outcome, class string
		want           bool
	}{
		{"TIMEOUT", "OUTCOME_UNKNOWN", true},
		{"CONN_LOST_AFTER_SEND", "OUTCOME_UNKNOWN", true},
		{"CONN_LOST_AFTER_SEND", "", true},
		{"PROTOCOL_ERROR_AFTER_SEND", "OUTCOME_UNKNOWN", true},
		{"RESPONSE", "FINAL", false},
		{"RESPONSE", "NOT_EXECUTED", false},
		{"CONNECT_FAILED", "NOT_SENT", false},
	}
	for _, tt := range tests {
		if got := (Attempt{Outcome: tt.outcome, Class: tt.class}).Unknown(); got != tt.want {
			t.Errorf("%s/%s: Unknown() = %v, want %v", tt.outcome, tt.class, got, tt.want)
		}
	}
}
