package load

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/bench/internal/workload"
)

// Report is a run's result: the machine, the settings, one Row per system
// and G, and every round's Sample.
type Report struct {
	Machine  Machine       `json:"machine"`
	Settings Settings      `json:"settings"`
	Wall     time.Duration `json:"wall_ns"` // the rounds, build and server start excluded
	Rows     []Row         `json:"rows"`
	// Pairs are the Targets whose two rows ran, measured round by round.
	Pairs   []Pair   `json:"pairs,omitempty"`
	Samples []Sample `json:"samples"`
	// Skipped are the selected systems that did not run.
	Skipped []Skipped `json:"skipped,omitempty"`
	// ConnsMemory is the conns-memory measurement, one per server
	// measured; nil when it was not selected.
	ConnsMemory []ConnsMemory `json:"conns_memory,omitempty"`
}

// Settings are the options a report was made with.
type Settings struct {
	Systems []string  `json:"systems"`
	G       []int     `json:"g"`
	N       int       `json:"n"`
	Warmup  int       `json:"warmup"`
	Rounds  int       `json:"rounds"`
	Workers int       `json:"rpcserver_workers"`
	Reduced []Reduced `json:"reduced,omitempty"`
	// Fixed are the systems that run at one concurrency only, whatever G.
	Fixed []Fixed `json:"fixed,omitempty"`
}

// Fixed names a system that runs at concurrency G only.
type Fixed struct {
	System string `json:"system"`
	G      int    `json:"g"`
}

// Reduced names a system that runs N/Div calls (and warm-up calls).
type Reduced struct {
	System string `json:"system"`
	Div    int    `json:"div"`
}

// Row is one line of the table: medians over rounds, except NonOK,
// Retried and TotalCalls, which are sums.
type Row struct {
	System        string `json:"system"`
	Key           string `json:"key"`
	G             int    `json:"g"`
	Rounds        int    `json:"rounds"`
	CallsPerRound int64  `json:"calls_per_round"`
	TotalCalls    int64  `json:"total_calls"`
	NonOK         int64  `json:"non_ok"`
	Retried       int64  `json:"retried"`
	FirstError    string `json:"first_error,omitempty"`

	CallsPerSec float64 `json:"calls_per_sec"`
	// VsRPCBench is CallsPerSec over the rpcbench row's of the same
	// shape (rpcbench-16k, rpcbench-64conns for their groups) at the same
	// G; 0 when that row did not run. VsFloor is the same over the
	// shape's raw-floor row.
	VsRPCBench float64 `json:"vs_rpcbench"`
	VsFloor    float64 `json:"vs_floor"`
	// VsFloorGet is CallsPerSec over the raw-floor-get row's at the same
	// G, in the standard shape only; 0 otherwise.
	VsFloorGet float64 `json:"vs_floor_get"`
	// MBPerSec is the median of Sample.MBPerSec: payload bytes, request
	// plus answer, in 10⁶ bytes a second.
	MBPerSec         float64 `json:"mb_per_sec"`
	P50us            float64 `json:"p50_us"`
	P99us            float64 `json:"p99_us"`
	ClientCPUPer100k float64 `json:"client_cpu_s_per_100k"`
	ServerCPUPer100k float64 `json:"server_cpu_s_per_100k"`
	ClientCPUOK      bool    `json:"client_cpu_ok"`
	ServerCPUOK      bool    `json:"server_cpu_ok"`
	AllocsPerCall    float64 `json:"client_allocs_per_call"`

	// Debits: the row's calls are debits. Executed is the sum over rounds
	// of Sample.Executed; ExecErrors counts the rounds with an ExecError,
	// the first of which is FirstExecError.
	Debits         bool   `json:"debits,omitempty"`
	Executed       int64  `json:"executed,omitempty"`
	ExecErrors     int    `json:"exec_errors,omitempty"`
	FirstExecError string `json:"first_exec_error,omitempty"`

	// Restarts, Drained and DrainedResent are the sums over rounds of
	// the Sample's (the rolling rows).
	Restarts      int   `json:"restarts,omitempty"`
	Drained       int   `json:"drained,omitempty"`
	DrainedResent int64 `json:"drained_resent,omitempty"`
}

// Failed reports whether any call of the row did not end OK or, in a row
// of debits, any round's executions were not one per OK call.
func (r *Row) Failed() bool { return r.NonOK > 0 || r.ExecErrors > 0 }

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteMarkdown writes the machine, the workload, the table and its notes
// as markdown, ready to paste into a README.
func (rep *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	m := rep.Machine
	fmt.Fprintf(&b, "Machine: %s %s/%s, %d CPUs (GOMAXPROCS %d)", m.GoVersion, m.OS, m.Arch, m.NumCPU, m.GOMAXPROCS)
	if m.CPUModel != "" {
		fmt.Fprintf(&b, ", %s", m.CPUModel)
	}
	if m.Kernel != "" {
		fmt.Fprintf(&b, ", kernel %s", m.Kernel)
	}
	if m.Commit != "" {
		fmt.Fprintf(&b, ", commit %s", m.Commit)
	}
	b.WriteString("\n\n")
	if len(rep.Rows) > 0 {
		rep.writeRows(&b)
	}
	if len(rep.ConnsMemory) > 0 {
		writeConnsMemory(&b, rep.ConnsMemory)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeRows writes the workload, the table of rows and its notes.
func (rep *Report) writeRows(b *strings.Builder) {
	st := rep.Settings
	gets, debits, several, rolling := false, false, false, false
	for _, r := range rep.Rows {
		gets = gets || !r.Debits
		debits = debits || r.Debits
		several = several || r.Key == KeyRPCBench16k || r.Key == KeyRaw16k || r.Key == KeyDRPC || r.Key == KeyRPCBench64 || r.Key == KeyRaw64
		rolling = rolling || r.Key == KeyRollingSteady || r.Key == KeyRollingRestart
	}
	b.WriteString("Workload: G goroutines share one client connection and make unary ")
	if gets {
		b.WriteString("`get` calls of one of 64 accounts " +
			"(request `account=acct-17`, 15 bytes; answer `account=acct-17 balance=1000 budget=5000 exec=0 replayed=false`)")
	}
	if gets && debits {
		b.WriteString(" or, in the rows of debits, ")
	}
	if debits {
		b.WriteString("`debit` calls (below)")
	}
	if several {
		b.WriteString(" (drpc, and the 16k and 64conns shapes, differ: notes under the table)")
	}
	if rolling {
		fmt.Fprintf(b, " (the rolling rows' client has a connection to each of %d servers: notes under the table)", rollingServers)
	}
	fmt.Fprintf(b, ", each server in its own process on 127.0.0.1. Per row and round: %d measured calls after %d warm-up calls. "+
		"Rounds: %d, every row once per round, interleaved; figures are medians over rounds. rpcserver -workers %d.\n\n",
		st.N, st.Warmup, st.Rounds, st.Workers)
	if debits {
		b.WriteString(debitWorkload)
	}

	marks := map[string]string{}
	for i, r := range st.Reduced {
		marks[r.System] = " " + superscript(i+1)
	}
	b.WriteString("| system | G | calls/s | vs rpcbench | vs floor | vs floor-get | MB/s | p50 µs | p99 µs | client CPU s/100k calls | server CPU s/100k calls | client allocs/call | non-OK / calls |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rep.Rows {
		name := r.System + marks[r.System]
		nonOK := fmt.Sprintf("%d / %d", r.NonOK, r.TotalCalls)
		if r.Failed() {
			name = "⚠ " + name
			nonOK = "**" + nonOK + "**"
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f | %s |\n",
			name, r.G, thousands(r.CallsPerSec), ratioCell(r.VsRPCBench), ratioCell(r.VsFloor), ratioCell(r.VsFloorGet), fmtMB(r.MBPerSec), fmtMicros(r.P50us), fmtMicros(r.P99us),
			cpuCell(r.ClientCPUPer100k, r.ClientCPUOK), cpuCell(r.ServerCPUPer100k, r.ServerCPUOK),
			r.AllocsPerCall, nonOK)
	}
	b.WriteString("\n")
	for i, r := range st.Reduced {
		fmt.Fprintf(b, "- %s %s makes N/%d calls per round (%d), and N/%d warm-up calls.\n",
			superscript(i+1), r.System, r.Div, max(1, st.N/r.Div), r.Div)
	}
	for _, key := range st.Systems {
		b.WriteString(systemNotes[key])
	}
	b.WriteString(fixedNote(st))
	b.WriteString(notes)
	if debits {
		b.WriteString(executedNote(rep.Rows))
	}
	if note := idleNote(rep.Rows); note != "" {
		b.WriteString(note)
	}
	b.WriteString(grpcBankNote(rep.Rows))
	b.WriteString(rollingNote(rep.Rows))
	for _, sk := range rep.Skipped {
		fmt.Fprintf(b, "- %s did not run: %s\n", sk.System, sk.Reason)
	}
	for _, r := range rep.Rows {
		if r.NonOK > 0 {
			fmt.Fprintf(b, "- ⚠ %s G=%d: %d of %d calls not OK; first: %s\n", r.System, r.G, r.NonOK, r.TotalCalls, r.FirstError)
		} else if r.FirstError != "" {
			fmt.Fprintf(b, "- ⚠ %s G=%d: %s\n", r.System, r.G, r.FirstError)
		}
		if r.ExecErrors > 0 {
			fmt.Fprintf(b, "- ⚠ %s G=%d: in %d of %d rounds: %s\n", r.System, r.G, r.ExecErrors, r.Rounds, r.FirstExecError)
		}
		if r.Retried > 0 {
			fmt.Fprintf(b, "- %s G=%d: %d OK calls needed more than one attempt.\n", r.System, r.G, r.Retried)
		}
	}
	b.WriteString("\n")
	writePairs(b, rep.Pairs)
}

// fixedNote names the rows that run at one G only, which -g lacks.
func fixedNote(st Settings) string {
	var gs []int
	names := map[int][]string{}
	for _, f := range st.Fixed {
		if slices.Contains(st.G, f.G) {
			continue
		}
		if names[f.G] == nil {
			gs = append(gs, f.G)
		}
		names[f.G] = append(names[f.G], f.System)
	}
	var b strings.Builder
	for _, g := range gs {
		verb := "runs"
		if len(names[g]) > 1 {
			verb = "run"
		}
		fmt.Fprintf(&b, "- %s %s at G=%d only, whatever -g says.\n", strings.Join(names[g], " and "), verb, g)
	}
	return b.String()
}

// idleTarget is the ratio of rpcbench-idle1000 to rpcbench at the same G
// that rpcbench aims for: a thousand idle connections should cost the
// busy one at most 5%.
const idleTarget = 0.95

// idleNote names each rpcbench-idle1000 row without an rpcbench row at
// its G to compare it with; where there is one, the ratio is in the
// targets table.
func idleNote(rows []Row) string {
	var b strings.Builder
	for _, r := range rows {
		if r.Key == KeyIdle && r.VsRPCBench <= 0 {
			fmt.Fprintf(&b, "- %s: no rpcbench row at G=%d to compare it with.\n", r.System, r.G)
		}
	}
	return b.String()
}

// grpcBankNote gives, at each G where both grpc-bank rows ran, the
// grpc-bank-rpcserver row's calls/s and server CPU per call over the
// grpc-bank-grpc-go row's: how the gRPC fault server compares with
// grpc-go's own server under the same client and handler.
func grpcBankNote(rows []Row) string {
	var b strings.Builder
	for _, fault := range rows {
		if fault.Key != KeyGRPCBankFault {
			continue
		}
		i := slices.IndexFunc(rows, func(r Row) bool { return r.Key == KeyGRPCBankGo && r.G == fault.G })
		if i < 0 {
			continue
		}
		peer := rows[i]
		cpu := "n/a"
		if fault.ServerCPUOK && peer.ServerCPUOK && peer.ServerCPUPer100k > 0 {
			cpu = fmt.Sprintf("%.2f", fault.ServerCPUPer100k/peer.ServerCPUPer100k)
		}
		calls := "n/a"
		if peer.CallsPerSec > 0 {
			calls = fmt.Sprintf("%.2f", fault.CallsPerSec/peer.CallsPerSec)
		}
		fmt.Fprintf(&b, "- %s / %s at G=%d: calls/s %s, server CPU per call %s.\n", fault.System, peer.System, fault.G, calls, cpu)
	}
	return b.String()
}

// rollingNote says, for each rolling-restart row, how many restarts its
// measured phases saw and how many of them drained clean by the servers'
// own logs, and gives, at each G where rolling-steady ran too, the
// restart row's calls/s and p99 over the steady row's.
func rollingNote(rows []Row) string {
	var b strings.Builder
	for _, rs := range rows {
		if rs.Key != KeyRollingRestart {
			continue
		}
		fmt.Fprintf(&b, "- %s G=%d: %d restarts over %d rounds, %d of them drained clean; the client re-sent %d DRAINED attempts.\n",
			rs.System, rs.G, rs.Restarts, rs.Rounds, rs.Drained, rs.DrainedResent)
	}
	for _, rs := range rows {
		if rs.Key != KeyRollingRestart {
			continue
		}
		i := slices.IndexFunc(rows, func(r Row) bool { return r.Key == KeyRollingSteady && r.G == rs.G })
		if i < 0 {
			continue
		}
		steady := rows[i]
		calls, p99 := "n/a", "n/a"
		if steady.CallsPerSec > 0 {
			calls = fmt.Sprintf("%.2f", rs.CallsPerSec/steady.CallsPerSec)
		}
		if steady.P99us > 0 {
			p99 = fmt.Sprintf("%.2f", rs.P99us/steady.P99us)
		}
		fmt.Fprintf(&b, "- %s / %s at G=%d: calls/s %s, p99 %s.\n", rs.System, steady.System, rs.G, calls, p99)
	}
	return b.String()
}

// systemNotes explain rows whose name does not say what they are.
var systemNotes = map[string]string{
	KeyDRPC: "- drpc (storj.io/drpc, hand-written Description, raw-bytes Encoding) opens G connections, one per goroutine: " +
		"a drpc connection carries one RPC at a time, and drpc gets concurrency from a pool of connections.\n",
	KeyIdle: fmt.Sprintf("- rpcbench-idle1000 is rpcbench while the driver holds %d more connections open to the same rpcserver, idle, "+
		"each having made one get before the warm-up; rpcserver runs with -max-conns %d.\n", idleConns, idleConns+defaultMaxConns),
	KeyRPCBench16k: fmt.Sprintf("- rpcbench-16k: rpcbench's `echo` method (idempotent, no key) with a %d-byte payload, answered unchanged; "+
		"every answer must equal its request. Its group's vs rpcbench divides by rpcbench-16k.\n", workload.EchoSize),
	KeyRaw16k: fmt.Sprintf("- raw-floor-16k: the raw echo with a %d-byte payload.\n", workload.EchoSize),
	KeyRPCBench64: fmt.Sprintf("- rpcbench-64conns: %d clients (`client.New` each, so %d connections), %d goroutines on each. "+
		"Its group's vs rpcbench divides by rpcbench-64conns.\n", conns64, conns64, perConn64),
	KeyRaw64: fmt.Sprintf("- raw-floor-64conns: %d raw connections, %d goroutines on each.\n", conns64, perConn64),
	KeyGoverned: "- rpcbench-governed is rpcbench with the client's governance on: a retry budget (10 tokens, ratio 0.1), " +
		"a circuit breaker (10 s window of 1 s buckets, opening at a 50% failure rate over at least 100 attempts, open for 1 s, 5 probes) " +
		"and an in-flight cap of 4×G, which never refuses; no rate limit.\n",
	KeyGRPCBankFault: "- grpc-bank-rpcserver: grpc-go's generated Bank client (adapters/gokit/bankpb), one *grpc.ClientConn, default options, " +
		"making Bank Get calls (GetRequest, AccountReply) of rpcserver -grpc, the gRPC fault server (internal/grpcwire), with no fault rule; " +
		"its request and answer are the bank's text to the driver (MB/s counts that text), protobuf on the wire. " +
		"The fault server logs an ATTEMPT event per request, which is part of what it costs.\n",
	KeyGRPCBankGo: "- grpc-bank-grpc-go: the same client, of grpc-go's own server (benchpeer -kind grpc-bank, default options), " +
		"whose Get runs the same internal/bank handler on the in-memory store and logs nothing.\n",
	KeyRollingSteady: fmt.Sprintf("- rolling-steady: one rpcbench client (client.NewMulti, Balancer p2c, RPCBenchConfig's timeouts) of %d rpcservers, "+
		"each in its own process with the in-memory store and -drain-timeout %v; server CPU is theirs summed.\n", rollingServers, rollingDrainTimeout),
	KeyRollingRestart: fmt.Sprintf("- rolling-restart: the same client and servers, while a controller restarts the servers in turn for the whole measured phase: "+
		"SIGTERM (a drain), wait for the exit, start again on the same address, wait for its announcement, %v, the next. "+
		"The phase lasts at least one round of %d restarts: when its N calls end sooner, it goes on in batches of N/%d until the round is done. "+
		"A restart drained clean when the server exited 0 and its log's DRAIN_DONE counts no connection open. "+
		"Server CPU is n/a: a server that exits takes its CPU time with it.\n", rollingGap, rollingServers, rollingBatch),
	KeyPerRequest: "- rpcbench-per-request opens one TCP connection per call (Config.ConnPerCall).\n",
	KeyRaw:        "- raw-floor is a length-prefixed echo with coalesced writes and no parsing: the most one connection carries on this machine.\n",
	KeyRawGet: "- raw-floor-get is raw-floor whose server answers each frame with the work rpcserver does for a get and nothing more: " +
		"internal/bank's handler on the in-memory store (workload.BankGet), its answer appended to the coalesced write. " +
		"vs floor-get is what rpcbench's protocol, client, server machinery and invariants cost over that work.\n",
	KeyDebit: "- rpcbench-debit sends its debits without a key, to an rpcserver with the in-memory store: the debit without exactly-once.\n",
	KeyKeyedMemory: "- rpcbench-keyed-memory: keyed debits, rpcserver `-store memory`; its idempotency records never expire, " +
		"so the server's heap grows by every key of the run.\n",
	KeyKeyedSQLite: "- rpcbench-keyed-sqlite: keyed debits, rpcserver `-store sqlite:FILE`, a fresh file in a temporary directory " +
		"(WAL, synchronous=NORMAL, one connection).\n",
	KeyKeyedPostgres: "- rpcbench-keyed-postgres: keyed debits, rpcserver `-store postgres://...`, a fresh database on a throwaway " +
		"PostgreSQL cluster (internal/pgcluster: Unix socket, default settings, fsync and synchronous_commit on). " +
		"Its server CPU is rpcserver's alone: PostgreSQL's own processes, on the same cores, are not counted.\n",
}

// debitWorkload describes the rows of debits, under the workload.
const debitWorkload = "Rows of debits: every call is a `debit` of 1 (`account=acct-N amount=1`), answered with the account's " +
	"balance and debit count after it (`account=acct-N balance=B budget=5000 exec=D replayed=false`). " +
	"In the rpcbench-keyed rows each call carries a fresh idempotency key (128 random bits in hex), so the server claims the key, " +
	"executes the debit and records its answer. Debit k of a server's run (warm-ups included) goes to account " +
	"64·⌊k/64000⌋ + k mod 64: round-robin over 64 accounts, so that concurrent debits touch different accounts, " +
	"each of which takes exactly 1000 debits, its whole balance, before the next 64 take over. " +
	"Every answer must name its account and have balance ≥ 0 and balance + exec = 1000; " +
	"rpcserver's exec.debit counter (ctl.stats) must rise by exactly one per OK call over each measured phase.\n\n"

// executedNote says what rpcserver's exec.debit counter showed in the
// rows of debits.
func executedNote(rows []Row) string {
	var ok, executed int64
	for _, r := range rows {
		if r.Debits && r.ExecErrors == 0 {
			ok += r.TotalCalls - r.NonOK
			executed += r.Executed
		}
	}
	if ok == 0 {
		return ""
	}
	return fmt.Sprintf("- exactly once: over the measured phases of the rows of debits without ⚠, rpcserver executed %s debits for %s OK calls.\n",
		thousands(float64(executed)), thousands(float64(ok)))
}

// notes explain the columns below the table.
const notes = `- calls/s: measured calls over the measured phase's wall time. vs rpcbench, vs floor: ratio of the medians to the rpcbench row and to the floor row (the raw echo) of the same shape (the standard gets, 16k or 64conns) at the same G; vs floor-get: to the floor-get row (the raw echo plus the get's work), the standard shape only.
- MB/s: payload bytes, request plus answer, of the calls answered right, over the measured phase's wall time, in 10⁶ bytes a second; frame headers are not counted.
- p50/p99: nearest-rank percentiles of every measured call's latency, non-OK calls included.
- client CPU: getrusage(RUSAGE_SELF) user+system of the driver over the measured phase; it includes the driver's own loop, timing and answer check, the same for every system.
- server CPU: utime+stime of the server process from /proc/PID/stat, in USER_HZ ticks taken as 100 Hz (10 ms resolution).
- client allocs/call: runtime.MemStats.Mallocs delta over the measured phase, divided by calls.
- Client and server share the machine's cores; only one row runs at a time.
- non-OK: calls that returned an error or another account's answer, summed over all rounds.
`

func ratioCell(v float64) string {
	if v <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", v)
}

// fmtMB prints megabytes a second with two decimals below 10 and one
// above.
func fmtMB(v float64) string {
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func cpuCell(v float64, ok bool) string {
	if !ok {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

// thousands formats v rounded to an integer with comma separators.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// fmtMicros prints microseconds with one decimal below 100 and none above.
func fmtMicros(us float64) string {
	if us < 100 {
		return strconv.FormatFloat(us, 'f', 1, 64)
	}
	return thousands(us)
}

func fmtDur(d time.Duration) string {
	return fmtMicros(float64(d.Nanoseconds())/1e3) + "µs"
}

func superscript(n int) string {
	const digits = "⁰¹²³⁴⁵⁶⁷⁸⁹"
	var b strings.Builder
	for _, c := range strconv.Itoa(n) {
		b.WriteString(string([]rune(digits)[c-'0']))
	}
	return b.String()
}
