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

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

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
			res := runCalls(context.Background(), fakeClient{tt.call}, getWork{reqs: reqs}, 7, 100, lat)
			if res.bad != tt.wantBad {
				t.Errorf("non-OK: got %d, want %d", res.bad, tt.wantBad)
			}
			if (res.first != nil) != (tt.wantBad > 0) {
				t.Errorf("first error: got %v, want one iff calls failed", res.first)
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
		{nil, "rpcbench rpcbench-idle1000 rpcbench-governed grpc-go drpc net/rpc rpcbench-per-request raw-floor raw-floor-get rpcbench-16k raw-floor-16k rpcbench-64conns raw-floor-64conns", false},
		{[]string{}, "", false},
		{[]string{"shapes"}, "rpcbench-idle1000 rpcbench-16k raw-floor-16k rpcbench-64conns raw-floor-64conns", false},
		{[]string{"raw-floor-16k", "drpc", "shapes"}, "raw-floor-16k drpc rpcbench-idle1000 rpcbench-16k rpcbench-64conns raw-floor-64conns", false},
		{[]string{"conns-memory"}, "", true}, // a measurement, taken out by splitMeasurements
		{[]string{"raw", "rpcbench"}, "raw-floor rpcbench", false},
		{[]string{"grpc-go", "grpc"}, "grpc-go", false},
		{[]string{"debits"}, "rpcbench-debit rpcbench-keyed-memory rpcbench-keyed-sqlite rpcbench-keyed-postgres", false},
		{[]string{"rpcbench-keyed-sqlite", "rpcbench", "debits"}, "rpcbench-keyed-sqlite rpcbench rpcbench-debit rpcbench-keyed-memory rpcbench-keyed-postgres", false},
		{[]string{"grpc-bank"}, "grpc-bank-rpcserver grpc-bank-grpc-go", false},
		{[]string{"grpc-bank-grpc-go", "grpc-bank"}, "grpc-bank-grpc-go grpc-bank-rpcserver", false},
		{[]string{"rolling"}, "rolling-steady rolling-restart", false},
		{[]string{"rolling-restart", "rolling"}, "rolling-restart rolling-steady", false},
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
		{"no memory counts", func(o *Options) { o.Systems = []string{KeyConnsMemory}; o.MemoryConns = nil }},
		{"memory counts not increasing", func(o *Options) { o.Systems = []string{KeyConnsMemory}; o.MemoryConns = []int{100, 100} }},
		{"zero memory count", func(o *Options) { o.Systems = []string{KeyConnsMemory}; o.MemoryConns = []int{0, 10} }},
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

func TestSplitMeasurements(t *testing.T) {
	tests := []struct {
		keys     []string
		wantRows []string
		wantMem  bool
	}{
		{nil, nil, false},
		{[]string{"rpcbench"}, []string{"rpcbench"}, false},
		{[]string{"conns-memory"}, []string{}, true},
		{[]string{"raw", "conns-memory", "drpc"}, []string{"raw", "drpc"}, true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.keys, ","), func(t *testing.T) {
			rows, mem := splitMeasurements(tt.keys)
			if mem != tt.wantMem {
				t.Errorf("conns-memory: got %v, want %v", mem, tt.wantMem)
			}
			if diff := cmp.Diff(tt.wantRows, rows); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRowGs(t *testing.T) {
	all := Systems()
	byKey := map[string]System{}
	for _, s := range all {
		byKey[s.Key] = s
	}
	sys := []System{byKey[KeyRPCBench], byKey[KeyRPCBench64], byKey[KeyIdle], byKey[KeyRaw64]}
	if diff := cmp.Diff([]int{8, 64, 512}, rowGs([]int{8, 64}, sys)); diff != "" {
		t.Errorf("G 8,64 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{8, 512, 64}, rowGs([]int{8}, sys)); diff != "" {
		t.Errorf("G 8 (-want +got):\n%s", diff)
	}
	tests := []struct {
		key  string
		g    int
		want bool
	}{
		{KeyRPCBench, 8, true},
		{KeyRPCBench, 512, false},
		{KeyRPCBench64, 8, false},
		{KeyRPCBench64, 512, true},
		{KeyIdle, 64, true},
		{KeyIdle, 8, false},
	}
	for _, tt := range tests {
		s := byKey[tt.key]
		if got := s.runsAt(tt.g, []int{8, 64}); got != tt.want {
			t.Errorf("%s runs at G=%d of 8,64: got %v, want %v", tt.key, tt.g, got, tt.want)
		}
	}
}

// TestAggregateRatios: each row's vs rpcbench and vs floor divide by the
// rpcbench and floor rows of its own shape and G; the idle row, of the
// standard shape, by rpcbench's.
func TestAggregateRatios(t *testing.T) {
	var systems []System
	for _, s := range Systems() {
		switch s.Key {
		case KeyRPCBench, KeyRaw, KeyRawGet, KeyIdle, KeyRPCBench16k, KeyRaw16k, KeyRPCBench64, KeyRaw64:
			systems = append(systems, s)
		}
	}
	cps := map[string]float64{
		"rpcbench": 100, "raw-floor": 400, "raw-floor-get": 200, "rpcbench-idle1000": 95,
		"rpcbench-16k": 30, "raw-floor-16k": 40,
		"rpcbench-64conns": 300, "raw-floor-64conns": 600,
	}
	var samples []Sample
	for _, sys := range systems {
		gs := []int{64}
		if sys.FixedG > 0 {
			gs = []int{sys.FixedG}
		}
		for _, g := range gs {
			for round, f := range []float64{0.5, 1, 2} { // the median is the middle round
				samples = append(samples, Sample{
					System: sys.Name, G: g, Round: round + 1,
					Calls: int64(cps[sys.Name] * f), Elapsed: time.Second, Bytes: int64(cps[sys.Name]*f) * 1e6,
				})
			}
		}
	}
	rows := aggregate(systems, rowGs([]int{64}, systems), samples)
	type ratios struct {
		G                                   int
		VsRPCBench, VsFloor, VsFloorGet, MB float64
	}
	got := map[string]ratios{}
	for _, r := range rows {
		got[r.System] = ratios{r.G, r.VsRPCBench, r.VsFloor, r.VsFloorGet, r.MBPerSec}
	}
	// The floor-get divides the standard shape's rows only.
	want := map[string]ratios{
		"rpcbench":          {64, 1, 0.25, 0.5, 100},
		"raw-floor":         {64, 4, 1, 2, 400},
		"raw-floor-get":     {64, 2, 0.5, 1, 200},
		"rpcbench-idle1000": {64, 0.95, 0.2375, 0.475, 95},
		"rpcbench-16k":      {64, 1, 0.75, 0, 30},
		"raw-floor-16k":     {64, 40.0 / 30, 1, 0, 40},
		"rpcbench-64conns":  {512, 1, 0.5, 0, 300},
		"raw-floor-64conns": {512, 2, 1, 0, 600},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("ratios (-want +got):\n%s", diff)
	}
	var order []string
	for _, r := range rows {
		order = append(order, r.System)
	}
	if got, want := strings.Join(order, " "), "rpcbench rpcbench-idle1000 raw-floor raw-floor-get rpcbench-16k raw-floor-16k rpcbench-64conns raw-floor-64conns"; got != want {
		t.Errorf("row order: got %q, want %q", got, want)
	}
}

func TestSampleMBPerSec(t *testing.T) {
	s := Sample{Calls: 1000, Bytes: 1000 * 2 * 16384, Elapsed: 500 * time.Millisecond}
	// 32.768 MB in half a second.
	if got, want := s.MBPerSec(), 65.536; got != want {
		t.Errorf("got %v MB/s, want %v", got, want)
	}
	if got := (&Sample{Bytes: 10}).MBPerSec(); got != 0 {
		t.Errorf("no elapsed time: got %v, want 0", got)
	}
}

// perWorkerClient records which worker each call was made on.
type perWorkerClient struct {
	mu    sync.Mutex // guards calls
	calls map[int]int
}

type workerCaller struct {
	w *perWorkerClient
	k int
}

func (c workerCaller) Call(_ context.Context, req []byte) ([]byte, error) {
	c.w.mu.Lock()
	c.w.calls[c.k]++
	c.w.mu.Unlock()
	return req, nil
}

func (w *perWorkerClient) Worker(k int) caller { return workerCaller{w, k} }
func (*perWorkerClient) Call(context.Context, []byte) ([]byte, error) {
	return nil, errors.New("called without a worker")
}
func (*perWorkerClient) Close() error { return nil }

func TestRunCallsWorkers(t *testing.T) {
	c := &perWorkerClient{calls: map[int]int{}}
	w := echoWork{reqs: workload.EchoRequests(100)}
	res := runCalls(context.Background(), c, w, 4, 400, nil)
	if res.bad != 0 {
		t.Fatalf("got %d non-OK (first: %v), want 0", res.bad, res.first)
	}
	if got, want := res.bytes, int64(400*2*100); got != want {
		t.Errorf("bytes: got %d, want %d", got, want)
	}
	total := 0
	for k, n := range c.calls {
		if k < 0 || k >= 4 {
			t.Errorf("worker %d: got calls, want workers 0-3 only", k)
		}
		total += n
	}
	if total != 400 {
		t.Errorf("calls on workers: got %d, want 400", total)
	}
}

func TestRunCallsBytesExcludeBad(t *testing.T) {
	var mu sync.Mutex
	n := 0
	c := fakeClient{func(req []byte) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n%4 == 0 {
			return req[:1], nil // a wrong echo
		}
		return req, nil
	}}
	res := runCalls(context.Background(), c, echoWork{reqs: workload.EchoRequests(50)}, 1, 100, nil)
	if res.bad != 25 {
		t.Errorf("non-OK: got %d, want 25", res.bad)
	}
	if got, want := res.bytes, int64(75*2*50); got != want {
		t.Errorf("bytes: got %d, want %d, of the right answers only", got, want)
	}
}

func TestDialMany(t *testing.T) {
	var dialed int
	dial := func(context.Context, string, int) (Client, error) {
		dialed++
		id := dialed
		return fakeClient{func([]byte) ([]byte, error) { return []byte{byte(id)}, nil }}, nil
	}
	c, err := dialMany(dial, 8)(context.Background(), "addr", 512)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if dialed != 64 {
		t.Errorf("dialed %d clients for G=512, 8 each, want 64", dialed)
	}
	wc := c.(workerClient)
	for _, tt := range []struct{ worker, client int }{{0, 1}, {7, 1}, {8, 2}, {511, 64}} {
		got, _ := wc.Worker(tt.worker).Call(context.Background(), nil)
		if int(got[0]) != tt.client {
			t.Errorf("worker %d: got client %d, want %d", tt.worker, got[0], tt.client)
		}
	}
	dialed = 0
	if _, err := dialMany(dial, 1)(context.Background(), "addr", 3); err != nil || dialed != 3 {
		t.Errorf("one per goroutine, G=3: got %d clients, %v, want 3", dialed, err)
	}
}

func TestHoldConns(t *testing.T) {
	var mu sync.Mutex
	open := 0
	dial := func(context.Context) (Client, error) {
		mu.Lock()
		defer mu.Unlock()
		open++
		return closeCounter{fakeClient: fakeClient{func(req []byte) ([]byte, error) { return req, nil }}, open: &open, mu: &mu}, nil
	}
	h, err := holdConns(context.Background(), 100, dial, getWork{reqs: workload.Requests()})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 100 || open != 100 {
		t.Fatalf("got %d held, %d open, want 100", len(h), open)
	}
	h.close()
	if open != 0 {
		t.Errorf("after close: %d open, want 0", open)
	}

	failing := func(context.Context) (Client, error) { return nil, errors.New("refused") }
	h, err = holdConns(context.Background(), 10, failing, getWork{reqs: workload.Requests()})
	h.close()
	if err == nil {
		t.Error("dial fails: got nil error, want one")
	}
}

type closeCounter struct {
	fakeClient
	mu   *sync.Mutex
	open *int
}

func (c closeCounter) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.open--
	return nil
}

func TestWriteMarkdownShapes(t *testing.T) {
	rep := &Report{
		Settings: Settings{Systems: []string{KeyRPCBench, KeyIdle, KeyRPCBench64}, G: []int{64}, N: 100, Rounds: 1, Workers: 8,
			Fixed: []Fixed{{System: KeyIdle, G: 64}, {System: KeyRPCBench64, G: 512}, {System: KeyRaw64, G: 512}}},
		Rows: []Row{
			{System: "rpcbench", Key: KeyRPCBench, G: 64, TotalCalls: 100, CallsPerSec: 1000, VsRPCBench: 1, VsFloor: 0.5, VsFloorGet: 0.8, MBPerSec: 0.078, ClientCPUOK: true, ServerCPUOK: true},
			{System: KeyIdle, Key: KeyIdle, G: 64, TotalCalls: 100, CallsPerSec: 930, VsRPCBench: 0.93, MBPerSec: 12.345, ClientCPUOK: true, ServerCPUOK: true},
			{System: KeyRPCBench64, Key: KeyRPCBench64, G: 512, TotalCalls: 100, CallsPerSec: 2000, VsRPCBench: 1, ClientCPUOK: true, ServerCPUOK: true},
		},
		Pairs: []Pair{{Target: Target{Num: KeyIdle, Den: KeyRPCBench, G: 64, Min: 0.95}, Name: "rpcbench-idle1000 / rpcbench",
			Ratios: []float64{0.9, 0.93, 0.97}, Median: 0.93, Lo: 0.9, Hi: 0.97}},
		ConnsMemory: []ConnsMemory{{
			Server:  "rpcserver",
			Points:  []MemPoint{{Conns: 0, RSSKiB: 10000}, {Conns: 1000, RSSKiB: 22000, PerConnKiB: 12}},
			Skipped: []string{"10000 connections: the driver's RLIMIT_NOFILE is 1024"},
		}},
	}
	var b bytes.Buffer
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| system | G | calls/s | vs rpcbench | vs floor | vs floor-get | MB/s |",
		"| rpcbench | 64 | 1,000 | 1.00 | 0.50 | 0.80 | 0.08 |",
		"| rpcbench-idle1000 | 64 | 930 | 0.93 | — | — | 12.3 |",
		"| rpcbench-idle1000 / rpcbench | 64 | calls/s | 0.93 | 0.90–0.97 (3 rounds) | ≥ 0.95 | **not met** |",
		"- rpcbench-64conns and raw-floor-64conns run at G=512 only, whatever -g says.",
		"| rpcserver | 0 | 10,000 | — |",
		"| rpcserver | 1,000 | 22,000 | 12.0 |",
		"- rpcserver: 10000 connections: the driver's RLIMIT_NOFILE is 1024, skipped.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "rpcbench-idle1000 runs at G=64 only") {
		t.Errorf("output says the idle row runs at G=64 only, which -g includes:\n%s", out)
	}

	memOnly := &Report{ConnsMemory: rep.ConnsMemory}
	b.Reset()
	if err := memOnly.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "| system |") {
		t.Errorf("a report without rows prints a table of rows:\n%s", b.String())
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
