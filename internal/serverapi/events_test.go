package serverapi_test

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// TestReadEvents decodes what slog's JSON handler writes, as rpcserver
// logs it.
func TestReadEvents(t *testing.T) {
	var buf bytes.Buffer
	lg := slog.New(slog.NewJSONHandler(&buf, nil))
	lg.Info(serverapi.EventConnOpen, serverapi.KeyConn, 1, serverapi.KeyRemote, "127.0.0.1:5000")
	lg.Warn(serverapi.EventExpired, serverapi.KeyID, uint64(7), serverapi.KeyMethod, "debit", serverapi.KeyBudget, 100, serverapi.KeyWaited, 120)

	evs, err := serverapi.ReadEvents(&buf)
	if err != nil {
		t.Fatalf("ReadEvents: %v", err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.String())
		if e.Time.IsZero() || time.Since(e.Time) > time.Hour {
			t.Errorf("%s: Time = %v, want the moment it was logged", e.Name, e.Time)
		}
	}
	want := []string{"CONN_OPEN conn=1 remote=127.0.0.1:5000", "EXPIRED budget=100 id=7 method=debit waited=120"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if len(evs) == 2 {
		if id, ok := evs[1].Int(serverapi.KeyID); id != 7 || !ok {
			t.Errorf("Int(id) = %d, %v; want 7, true", id, ok)
		}
		if _, ok := evs[1].Int(serverapi.KeyRemote); ok {
			t.Errorf("Int(remote) reported an absent attribute as present")
		}
		if m := evs[1].Text(serverapi.KeyMethod); m != "debit" {
			t.Errorf("Text(method) = %q, want %q", m, "debit")
		}
	}
}

func TestReadEventsRejects(t *testing.T) {
	const good = `{"time":"2026-01-02T03:04:05.000000006Z","level":"INFO","msg":"CONN_OPEN","conn":1,"remote":"x"}`
	// exec is an EXEC line as rpcserver logs it, with old replaced by new.
	exec := func(old, new string) string {
		return strings.Replace(`{"time":"2026-01-02T03:04:05Z","level":"DEBUG","msg":"EXEC","conn":1,"id":7,"method":"debit","key":"k1","account":"a","status":"OK"}`, old, new, 1)
	}
	tests := []struct {
		name    string
		log     string
		wantErr string // substring of the error
	}{
		{"unknown_event", good + "\n" + strings.Replace(good, "CONN_OPEN", "CONN_OPENED", 1), `log line 2: unknown event "CONN_OPENED"`},
		{"lowercase_event", strings.Replace(good, "CONN_OPEN", "conn_open", 1), `log line 1: unknown event "conn_open"`},
		{"no_msg", `{"time":"2026-01-02T03:04:05Z","level":"INFO"}`, `log line 1: unknown event ""`},
		{"not_json", good + "\nCONN_OPEN remote=x", "log line 2"},
		{"torn_mid_log", good[:40] + "\n" + good, "log line 1"},
		{"bad_time", strings.Replace(good, "2026-01-02T03:04:05.000000006Z", "yesterday", 1), `log line 1: time "yesterday"`},
		{"no_time", strings.Replace(good, `"time":"2026-01-02T03:04:05.000000006Z",`, "", 1), `log line 1: time ""`},
		{"no_level", strings.Replace(good, `"level":"INFO",`, "", 1), `log line 1: CONN_OPEN has no level`},
		{"missing_key", strings.Replace(good, `"conn":1,`, "", 1), `log line 1: CONN_OPEN has no conn`},
		{"missing_exec_status", exec(`,"status":"OK"`, ""), `log line 1: EXEC has no status`},
		{"missing_exec_key", exec(`"key":"k1",`, ""), `log line 1: EXEC has no key`},
		{"key_of_wrong_type", strings.Replace(good, `"conn":1`, `"conn":"1"`, 1), `log line 1: CONN_OPEN conn="1", want a number`},
		{"bool_of_wrong_type", `{"time":"2026-01-02T03:04:05Z","level":"WARN","msg":"CONN_READ_ERROR","remote":"x","err":"e","reset":"true"}`,
			`log line 1: CONN_READ_ERROR reset="true", want true or false`},
		{"unknown_key", strings.Replace(good, `"conn":1`, `"conn":1,"connection":1`, 1), `log line 1: CONN_OPEN has unknown key connection`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := serverapi.ReadEvents(strings.NewReader(tt.log))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "serverapi: ") {
				t.Errorf("ReadEvents(%q) error = %v, want \"serverapi: ...%s...\"", tt.log, err, tt.wantErr)
			}
		})
	}
}

// TestReadEventsTorn: a server killed mid-write leaves a torn line, which
// the restarted server's first event continues; ReadEvents returns it as
// EventTorn and goes on.
func TestReadEventsTorn(t *testing.T) {
	const good = `{"time":"2026-01-02T03:04:05.000000006Z","level":"INFO","msg":"CONN_OPEN","conn":1,"remote":"x"}`
	for _, tt := range []struct {
		name   string
		cut    int // bytes of the torn line left
		last   bool
		events int
	}{
		{"continued", 50, false, 4},
		{"last", 50, true, 3},
		// Cut inside "{\"time\":", as a kill can cut a line anywhere.
		{"continued, cut in the first bytes", 5, false, 4},
		{"last, cut in the first bytes", 5, true, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			log := good + "\n" + good[:tt.cut] + good + "\n" + good
			if tt.last {
				log = good + "\n" + good + "\n" + good[:tt.cut]
			}
			evs, err := serverapi.ReadEvents(strings.NewReader(log))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range evs {
				names = append(names, e.Name)
			}
			torn := slices.Index(names, serverapi.EventTorn)
			if len(evs) != tt.events || torn < 0 || evs[torn].Text("text") != good[:tt.cut] {
				t.Errorf("events %v, want %d with one TORN holding %q", names, tt.events, good[:tt.cut])
			}
		})
	}
}
