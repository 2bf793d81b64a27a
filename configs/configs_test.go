package configs

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/cut"
)

// TestBuiltin: the built-in configurations, read from their files, are
// the scorecard's columns, in its order, each needing and running what
// the scorecard's columns always have; every file is one of them; each
// service config names the bank service and has durations in "s" (grpc-go
// rejects "100ms"; adapters/grpcgo's tests check it accepts these).
func TestBuiltin(t *testing.T) {
	type want struct {
		needs, runs []string
		key, sc     bool
	}
	wants := map[string]want{
		"default":     {runs: []string{"plain", "hedge"}},
		"retry":       {needs: []string{"retry_policy"}, runs: []string{"plain", "retry"}, sc: true},
		"retry+key":   {needs: []string{"retry_policy"}, runs: []string{"plain", "retry"}, key: true, sc: true},
		"throttled":   {needs: []string{"retry_policy", "throttling"}, runs: []string{"plain", "retry"}, sc: true},
		"hedged":      {needs: []string{"hedging"}, runs: []string{"hedge"}, sc: true},
		"per-attempt": {needs: []string{"retry_policy", "per_attempt_timeout"}, runs: []string{"per-attempt"}, sc: true},
		"keepalive":   {needs: []string{"keepalive"}, runs: []string{"keepalive"}, sc: true},
	}
	got := Builtin()
	if names := BuiltinNames(); !slices.Equal(names, []string{"default", "retry", "retry+key", "throttled", "hedged", "per-attempt", "keepalive"}) {
		t.Errorf("built-in names %v", names)
	}
	for _, g := range got {
		w, ok := wants[g.Name]
		if !ok {
			t.Errorf("unexpected built-in %q", g.Name)
			continue
		}
		if !slices.Equal(g.Needs, w.needs) || !slices.Equal(g.Runs, w.runs) || g.Key != w.key || (g.ServiceConfig != nil) != w.sc {
			t.Errorf("%s: needs %v runs %v key %v service config %v, want %+v", g.Name, g.Needs, g.Runs, g.Key, g.ServiceConfig != nil, w)
		}
		if g.Doc == "" {
			t.Errorf("%s has no doc", g.Name)
		}
		if g.ServiceConfig != nil {
			checkBankServiceConfig(t, g)
		}
	}
	all, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(slices.Sorted(slices.Values(all)), slices.Sorted(slices.Values(builtin))) {
		t.Errorf("configs/*.json are %v, Builtin reads %v: list a new file in builtin", all, builtin)
	}
	if ka := got[len(got)-1]; ka.Keepalive == nil || ka.Keepalive.Time != 10*time.Second || ka.Keepalive.Timeout != time.Second {
		t.Errorf("keepalive: %+v", ka.Keepalive)
	}
}

func checkBankServiceConfig(t *testing.T, g cut.GRPCConfig) {
	t.Helper()
	var sc struct {
		MethodConfig []struct {
			Name        []map[string]string
			RetryPolicy struct {
				MaxAttempts                int
				InitialBackoff, MaxBackoff string
				PerAttemptRecvTimeout      string
			}
			HedgingPolicy *struct {
				MaxAttempts  int
				HedgingDelay string
			}
		}
	}
	if err := json.Unmarshal(g.ServiceConfig, &sc); err != nil {
		t.Fatalf("%s: %v", g.Name, err)
	}
	if len(sc.MethodConfig) != 1 || sc.MethodConfig[0].Name[0]["service"] != "rpcbench.bank.v1.Bank" {
		t.Errorf("%s: method config %+v, want one for rpcbench.bank.v1.Bank", g.Name, sc.MethodConfig)
		return
	}
	if hp := sc.MethodConfig[0].HedgingPolicy; hp != nil {
		if hp.MaxAttempts != 3 || hp.HedgingDelay != "0.1s" || g.Name != "hedged" {
			t.Errorf("%s: hedging policy %+v", g.Name, *hp)
		}
		return
	}
	rp := sc.MethodConfig[0].RetryPolicy
	if rp.MaxAttempts != 4 || rp.InitialBackoff != "0.02s" || rp.MaxBackoff != "0.2s" {
		t.Errorf("%s: retry policy %+v", g.Name, rp)
	}
	if (rp.PerAttemptRecvTimeout != "") != (g.Name == "per-attempt") || g.Name == "per-attempt" && rp.PerAttemptRecvTimeout != "0.2s" {
		t.Errorf("%s: perAttemptRecvTimeout %q, want 0.2s in per-attempt alone", g.Name, rp.PerAttemptRecvTimeout)
	}
}

// TestAdjust: a keepalive configuration permits pings without a stream
// in a stack whose pings always go, and drops its retry policy in a
// stack without one; a configuration that needs a retry policy or
// hedging keeps its service config.
func TestAdjust(t *testing.T) {
	var ka, retry, hedged cut.GRPCConfig
	for _, g := range Builtin() {
		switch g.Name {
		case "keepalive":
			ka = g
		case "retry":
			retry = g
		case "hedged":
			hedged = g
		}
	}
	always := cut.Stack{Name: "s", PingsAlways: true}
	got := ka.Adjust(always, cut.Capabilities{Keepalive: true})
	if !got.Keepalive.PermitWithoutStream || got.ServiceConfig != nil {
		t.Errorf("keepalive in a stack pinging always, without retries: %+v, %s", *got.Keepalive, got.ServiceConfig)
	}
	if ka.Keepalive.PermitWithoutStream {
		t.Errorf("Adjust changed the configuration it was given")
	}
	got = ka.Adjust(cut.Stack{Name: "t"}, cut.Capabilities{Keepalive: true, RetryPolicy: true})
	if got.Keepalive.PermitWithoutStream || string(got.ServiceConfig) != string(ka.ServiceConfig) {
		t.Errorf("keepalive in a stack with retries: %+v, %s", *got.Keepalive, got.ServiceConfig)
	}
	if got := retry.Adjust(always, cut.Capabilities{}); string(got.ServiceConfig) != string(retry.ServiceConfig) {
		t.Errorf("Adjust changed the retry configuration: %s", got.ServiceConfig)
	}
	if got := hedged.Adjust(always, cut.Capabilities{Hedging: true}); string(got.ServiceConfig) != string(hedged.ServiceConfig) {
		t.Errorf("Adjust dropped the hedging policy of a stack that hedges without a retry policy: %s", got.ServiceConfig)
	}
}

// TestParse: what a user's configuration derives, and each mistake an
// error naming the file and the line.
func TestParse(t *testing.T) {
	files := map[string]string{"sc.json": `{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":2}}]}`, "bad.json": `[1]`}
	read := func(rel string) ([]byte, error) {
		if b, ok := files[rel]; ok {
			return []byte(b), nil
		}
		return nil, os.ErrNotExist
	}
	tests := []struct {
		name, in string
		want     cut.GRPCConfig // Source, ServiceConfig not compared
		err      string         // a part of the error; "" for none
	}{
		{name: "name alone", in: `{"name": "mine"}`, want: cut.GRPCConfig{Name: "mine", Runs: []string{"plain"}}},
		{name: "derived", in: "{\n\"name\": \"retry-internal\",\n\"serviceConfig\": {\"retryThrottling\": {}, \"methodConfig\": [{\"retryPolicy\": {\"perAttemptRecvTimeout\": \"1s\"}}, {\"hedgingPolicy\": {}}]},\n\"keepalive\": {\"time\": \"20s\", \"timeout\": \"2s\", \"permitWithoutStream\": true},\n\"waitForReady\": true, \"idempotencyKey\": true}",
			want: cut.GRPCConfig{Name: "retry-internal", WaitForReady: true, Key: true,
				Keepalive: &cut.Keepalive{Time: 20 * time.Second, Timeout: 2 * time.Second, PermitWithoutStream: true},
				Needs:     []string{"retry_policy", "throttling", "hedging", "per_attempt_timeout", "keepalive", "wait_for_ready"},
				Runs:      []string{"plain", "retry", "hedge", "per-attempt", "keepalive"}}},
		{name: "file", in: `{"name": "a+b", "serviceConfigFile": "sc.json", "needs": [], "runs": ["retry"]}`,
			want: cut.GRPCConfig{Name: "a+b", Needs: []string{}, Runs: []string{"retry"}}},
		{name: "not json", in: "{\n\"name\": \"x\",,\n}", err: "f.json:2: not JSON"},
		{name: "not an object", in: `["x"]`, err: "f.json:1: not a JSON object"},
		{name: "trailing", in: "{\"name\": \"x\"}\n{}", err: "f.json:2: more after the object"},
		{name: "unknown key", in: "{\"name\": \"x\",\n \"retries\": 3}", err: `f.json:2: unknown key "retries"`},
		{name: "twice", in: "{\"name\": \"x\",\n \"name\": \"y\"}", err: `f.json:2: key "name" twice`},
		{name: "wrong type", in: "{\"name\": \"x\",\n\n \"waitForReady\": \"yes\"}", err: "f.json:3: waitForReady: got a JSON string, want true or false"},
		{name: "no name", in: `{"doc": "x"}`, err: `no "name"`},
		{name: "bad name", in: `{"name": "Retry Fast"}`, err: `f.json:1: name "Retry Fast": want`},
		{name: "reserved", in: `{"name": "server"}`, err: "reference or server"},
		{name: "both", in: `{"name": "x", "serviceConfig": {}, "serviceConfigFile": "sc.json"}`, err: "both serviceConfig and serviceConfigFile"},
		{name: "sc not object", in: `{"name": "x", "serviceConfig": "retry"}`, err: "serviceConfig is not a JSON object"},
		{name: "sc file missing", in: `{"name": "x", "serviceConfigFile": "nope.json"}`, err: "serviceConfigFile: file does not exist"},
		{name: "sc file not object", in: `{"name": "x", "serviceConfigFile": "bad.json"}`, err: "bad.json is not a JSON object"},
		{name: "sc shape", in: `{"name": "x", "serviceConfig": {"methodConfig": {}}}`, err: "service config: methodConfig: got a JSON object, want a list"},
		{name: "sc typo", in: "{\"name\": \"x\",\n \"serviceConfig\": {\"methodConfig\": [{\"name\": [{}], \"retryPolicyy\": {}}]}}", err: `f.json:2: service config: methodConfig[0]: unknown key "retryPolicyy"`},
		{name: "sc typo deep", in: `{"name": "x", "serviceConfig": {"methodConfig": [{"retryPolicy": {"retryableStatusCode": []}}]}}`, err: `methodConfig[0].retryPolicy: unknown key "retryableStatusCode"`},
		{name: "sc top typo", in: `{"name": "x", "serviceConfig": {"methodconfig": []}}`, err: `the top level: unknown key "methodconfig"`},
		{name: "keepalive case", in: "{\"name\": \"x\",\n \"keepalive\": {\"Time\": \"10s\", \"timeout\": \"1s\"}}", err: `f.json:2: keepalive: unknown key "Time"`},
		{name: "keepalive twice", in: `{"name": "x", "keepalive": {"time": "10s", "time": "1s"}}`, err: `keepalive: key "time" twice`},
		{name: "keepalive", in: `{"name": "x", "keepalive": {"time": "10"}}`, err: `keepalive: time "10": want a duration`},
		{name: "keepalive key", in: "{\"name\": \"x\",\n\n \"keepalive\": {\"time\": \"1s\", \"timeout\": \"1s\", \"every\": 1}}", err: `f.json:3: keepalive: unknown key "every"`},
		{name: "needs", in: `{"name": "x", "needs": ["retries"]}`, err: `needs "retries": no such capability`},
		{name: "runs", in: `{"name": "x", "runs": ["all"]}`, err: `runs "all": no such kind`},
		{name: "runs empty", in: `{"name": "x", "runs": []}`, err: "runs is empty"},
		{name: "runs twice", in: `{"name": "x", "runs": ["plain", "plain"]}`, err: `runs "plain" twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("f.json", []byte(tt.in), read)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("got error %v, want one with %q wrapping ErrInvalid", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.Source, got.ServiceConfig = "", nil
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

// TestLoad: a serviceConfigFile is read relative to the configuration's
// own file, wherever rpcbench runs.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	sc := `{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2}}]}`
	if err := os.WriteFile(filepath.Join(dir, "sc.json"), []byte(sc), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "mine.json")
	if err := os.WriteFile(path, []byte(`{"name": "mine", "serviceConfigFile": "sc.json"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	g, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(g.ServiceConfig) != sc || g.Source != path || !slices.Equal(g.Needs, []string{"retry_policy"}) {
		t.Errorf("got %+v", g)
	}
	if _, err := Load(filepath.Join(dir, "none.json")); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("a missing file: %v", err)
	}
}
