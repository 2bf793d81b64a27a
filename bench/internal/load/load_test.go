package load

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/bench/internal/workload"
)

// fakeClient answers from a function, for tests of the counting.
type fakeClient struct {
	call func(req []byte) ([]byte, error)
}

func (f fakeClient) Call(_ context.Context, req []byte) ([]byte, error) { return f.call(req) }
func (fakeClient) Close() error                                         { return nil }

func TestRunCallsCounts(t *testing.T) {
	reqs := workload.Requests()
	store := workload.NewStore()
	var mu sync.Mutex
	calls := 0
	tests := []struct {
		name    string
		call    func(req []byte) ([]byte, error)
		wantBad int64
	}{
		{"right answers", store.Get, 0},
		{"errors", func([]byte) ([]byte, error) { return nil, errors.New("boom") }, 100},
		{"another account", func([]byte) ([]byte, error) { return store.Get(reqs[3]) }, 100 - 100/64 - 1},
		{"every other call fails", func(req []byte) ([]byte, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls%2 == 0 {
				return nil, errors.New("boom")
			}
			return store.Get(req)
		}, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lat := make([]time.Duration, 100)
			bad, first := runCalls(context.Background(), fakeClient{tt.call}, getWork{reqs: reqs}, 7, 100, lat)
			if bad != tt.wantBad {
				t.Errorf("non-OK: got %d, want %d", bad, tt.wantBad)
			}
			if (first != nil) != (tt.wantBad > 0) {
				t.Errorf("first error: got %v, want one iff calls failed", first)
			}
			for i, d := range lat {
				if d <= 0 {
					t.Fatalf("latency %d: got %v, want > 0", i, d)
				}
			}
		})
	}
}

func TestSelectSystems(t *testing.T) {
	tests := []struct {
		keys    []string
		want    string
		wantErr bool
	}{
		{nil, "rpcbench rpcbench-governed grpc-go net/rpc rpcbench-per-request raw-floor", false},
		{[]string{"raw", "rpcbench"}, "raw-floor rpcbench", false},
		{[]string{"grpc-go", "grpc"}, "grpc-go", false},
		{[]string{"debits"}, "rpcbench-debit rpcbench-keyed-memory rpcbench-keyed-sqlite rpcbench-keyed-postgres", false},
		{[]string{"rpcbench-keyed-sqlite", "rpcbench", "debits"}, "rpcbench-keyed-sqlite rpcbench rpcbench-debit rpcbench-keyed-memory rpcbench-keyed-postgres", false},
		{[]string{"thrift"}, "", true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.keys, ","), func(t *testing.T) {
			got, err := selectSystems(tt.keys)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error: got %v, want error=%v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrOptions) {
				t.Errorf("got %v, want an error wrapping ErrOptions", err)
			}
			var names []string
			for _, s := range got {
				names = append(names, s.Name)
			}
			if g := strings.Join(names, " "); g != tt.want {
				t.Errorf("got %q, want %q", g, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Options)
	}{
		{"zero N", func(o *Options) { o.N = 0 }},
		{"zero rounds", func(o *Options) { o.Rounds = 0 }},
		{"no G", func(o *Options) { o.G = nil }},
		{"zero G", func(o *Options) { o.G = []int{8, 0} }},
		{"negative warmup", func(o *Options) { o.Warmup = -1 }},
		{"zero workers", func(o *Options) { o.Workers = 0 }},
		{"unknown system", func(o *Options) { o.Systems = []string{"corba"} }},
		{"unknown profiled system", func(o *Options) { o.CPUProfile = "x"; o.ProfileSystems = []string{"corba"} }},
	}
	def := DefaultOptions()
	if err := def.Validate(); err != nil {
		t.Fatalf("DefaultOptions: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			tt.modify(&o)
			if err := o.Validate(); !errors.Is(err, ErrOptions) {
				t.Errorf("got %v, want an error wrapping ErrOptions", err)
			}
		})
	}
}

func TestWriteMarkdownFlagsFailedRows(t *testing.T) {
	rep := &Report{
		Settings: Settings{Systems: []string{KeyRPCBench, KeyPerRequest}, N: 100, Rounds: 1, Workers: 8, Reduced: []Reduced{{System: "rpcbench-per-request", Div: 10}}},
		Rows: []Row{
			{System: "rpcbench", G: 8, TotalCalls: 100, CallsPerSec: 12345.6, VsRPCBench: 1, ClientCPUOK: true, ServerCPUOK: true},
			{System: "rpcbench-per-request", G: 8, TotalCalls: 10, NonOK: 2, FirstError: "rpcbench: UNAVAILABLE", VsRPCBench: 0.1},
		},
	}
	var b bytes.Buffer
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| rpcbench | 8 | 12,346 | 1.00 |",
		"| ⚠ rpcbench-per-request ¹ | 8 |",
		"| n/a | n/a |",
		"**2 / 10** |",
		"- ⚠ rpcbench-per-request G=8: 2 of 10 calls not OK; first: rpcbench: UNAVAILABLE",
		"- ¹ rpcbench-per-request makes N/10 calls per round (10)",
		"- rpcbench-per-request opens one TCP connection per call",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "raw-floor") {
		t.Errorf("output explains raw-floor, which did not run:\n%s", out)
	}
}

func TestThousands(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999.4: "999", 999.5: "1,000", 1234567: "1,234,567"} {
		if got := thousands(in); got != want {
			t.Errorf("thousands(%v): got %q, want %q", in, got, want)
		}
	}
}

// TestRunSmoke runs every system for real, servers in their own
// processes, with a few calls, and checks that every call got its own
// account's answer. It asserts nothing about speed.
func TestRunSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and spawns the servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := DefaultOptions()
	o.N, o.Warmup, o.Rounds, o.G = 200, 20, 1, []int{8}
	o.CPUProfile = filepath.Join(t.TempDir(), "cpu")
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	def, err := selectSystems(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(rep.Rows), len(def); got != want {
		t.Fatalf("rows: got %d, want %d", got, want)
	}
	for _, r := range rep.Rows {
		want := int64(200)
		if r.Key == KeyPerRequest {
			want = 20
		}
		if r.TotalCalls != want || r.NonOK != 0 {
			t.Errorf("%s: got %d non-OK of %d calls (first: %s), want 0 of %d", r.System, r.NonOK, r.TotalCalls, r.FirstError, want)
		}
		if r.CallsPerSec <= 0 || r.P50us <= 0 || r.P99us < r.P50us {
			t.Errorf("%s: got calls/s %v p50 %vµs p99 %vµs, want positive and ordered", r.System, r.CallsPerSec, r.P50us, r.P99us)
		}
	}
	if _, err := os.Stat(o.CPUProfile + ".rpcbench.g8.r1.pprof"); err != nil {
		t.Errorf("cpu profile of the rpcbench row: %v", err)
	}
}
