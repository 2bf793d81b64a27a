package trace

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// TestRoundTrip: what New and Write make, Read gives back, for every
// outcome and class the client has.
func TestRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 1, 2, 35, 21, 373500000, time.UTC)
	call := &client.Call{Method: "debit", Key: "k1"}
	var recs []Record
	outcomes := []client.Outcome{client.OutcomeConnectFailed, client.OutcomeNotSent, client.OutcomeResponse, client.OutcomeTimeout,
		client.OutcomeCanceled, client.OutcomeConnLost, client.OutcomeProtocolError, client.OutcomeAbandoned}
	classes := []client.Class{client.ClassNotSent, client.ClassNotExecuted, client.ClassUnknown, client.ClassFinal}
	for i, o := range outcomes {
		a := client.Attempt{ID: uint64(i + 1), BudgetMs: 299, Class: classes[i%len(classes)], Outcome: o, Status: proto.StatusOK,
			Err: "context deadline exceeded", Backoff: 22 * time.Millisecond, Addr: "127.0.0.1:1"}
		recs = append(recs, New(1, 2, call, i, a, client.Span{Start: at, End: at.Add(300 * time.Millisecond)}))
	}
	var b bytes.Buffer
	if err := Write(&b, recs); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(recs, got); diff != "" {
		t.Errorf("round trip (-wrote +read):\n%s", diff)
	}
	if recs[2].Status != "OK" || recs[3].Status != "" {
		t.Errorf("status %q for a response, %q for a timeout; want OK and empty", recs[2].Status, recs[3].Status)
	}
}

// TestReadsCommittedEvidence: every trace file in the committed evidence
// reads back whole.
func TestReadsCommittedEvidence(t *testing.T) {
	dirs, _ := filepath.Glob("../../evidence/*/logs")
	dirs = append(dirs, "../../evidence/logs")
	files := map[string][]byte{}
	for _, d := range dirs {
		logs, err := report.ReadLogs(d)
		if err != nil {
			t.Fatal(err)
		}
		for name, b := range logs {
			if strings.HasPrefix(name, "trace-") && strings.HasSuffix(name, ".jsonl") {
				files[filepath.Join(d, name)] = b
			}
		}
	}
	if len(files) < 10 {
		t.Fatalf("found %d trace files in the evidence", len(files))
	}
	for f, b := range files {
		recs, err := Read(bytes.NewReader(b))
		if err != nil {
			t.Errorf("%s: %v", f, err)
		}
		// Written again, each line is what the file holds: one format.
		// A line the evidence writer put in place of those it cut
		// (serverapi.CutPrefix) is no record, and is left out.
		var out bytes.Buffer
		if err := Write(&out, recs); err != nil {
			t.Fatal(err)
		}
		var records []string
		for _, l := range strings.SplitAfter(string(b), "\n") {
			if !strings.HasPrefix(l, serverapi.CutPrefix) {
				records = append(records, l)
			}
		}
		if out.String() != strings.Join(records, "") {
			t.Errorf("%s: written again differs from the file", f)
		}
	}
}

func TestRead(t *testing.T) {
	line := `{"client":2,"call":3,"attempt":1,"method":"get","key":"","id":0,"start":"2026-12-01T02:35:21Z","end":"2026-12-01T02:35:21Z","outcome":"CONNECT_FAILED","class":"NOT_SENT","status":"","budget_ms":300,"backoff_ms":0,"addr":"","err":""}`
	minimal := `{"client":2,"call":3,"attempt":1,"method":"get","id":0,"start":"2026-12-01T02:35:21Z","end":"2026-12-01T02:35:21Z","outcome":"CONNECT_FAILED","class":"NOT_SENT","budget_ms":300}`
	tests := []struct {
		name, in, wantErr string
		n                 int
	}{
		{"a line, a blank one and one with the optional keys left out", line + "\n\n" + minimal + "\n", "", 2},
		{"unknown key", strings.Replace(minimal, `"client":2`, `"client":2,"colour":"red"`, 1), `line 1: json: unknown field "colour"`, 0},
		{"missing keys", strings.Replace(minimal, `"outcome":"CONNECT_FAILED","class":"NOT_SENT",`, "", 1), "line 1: missing outcome, class", 0},
		{"unknown outcome", strings.Replace(minimal, `CONNECT_FAILED`, `EXPLODED`, 1), `unknown outcome "EXPLODED"`, 0},
		{"unknown class", strings.Replace(minimal, `NOT_SENT`, `MAYBE`, 1), `unknown class "MAYBE"`, 0},
		{"end before start", strings.Replace(minimal, `"end":"2026-12-01T02:35:21Z"`, `"end":"2026-12-01T02:35:20Z"`, 1), "end before start", 0},
		{"client 0", strings.Replace(minimal, `"client":2`, `"client":0`, 1), "client 0, want 1 or more", 0},
		{"second line bad", line + "\nCASE x PASS\n", "line 2: invalid character", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(strings.NewReader(tt.in))
			if (tt.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Read: %v, want an error containing %q", err, tt.wantErr)
			}
			if len(got) != tt.n {
				t.Errorf("%d records, want %d", len(got), tt.n)
			}
		})
	}
}

func TestUnknown(t *testing.T) {
	for c, want := range map[client.Class]bool{client.ClassUnknown: true, client.ClassFinal: false, client.ClassNotExecuted: false, client.ClassNotSent: false} {
		if got := (Record{Class: c}).Unknown(); got != want {
			t.Errorf("%v: Unknown() = %v, want %v", c, got, want)
		}
	}
}
