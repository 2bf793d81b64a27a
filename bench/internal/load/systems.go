package load

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rpcbench/rpcbench/bench/internal/drpcpeer"
	"github.com/rpcbench/rpcbench/bench/internal/grpcbank"
	"github.com/rpcbench/rpcbench/bench/internal/grpcpeer"
	"github.com/rpcbench/rpcbench/bench/internal/netrpcpeer"
	"github.com/rpcbench/rpcbench/bench/internal/rawwire"
	"github.com/rpcbench/rpcbench/bench/internal/workload"
	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// System keys, as -systems takes them.
const (
	KeyRPCBench   = "rpcbench"
	KeyGRPC       = "grpc"
	KeyNetRPC     = "netrpc"
	KeyPerRequest = "per-request"
	KeyRaw        = "raw"
	KeyRawGet     = "raw-floor-get"
	KeyGoverned   = "rpcbench-governed"
	KeyDRPC       = "drpc"

	// The shapes of load: each a group of rows beside its floor.
	KeyRPCBench16k = "rpcbench-16k"
	KeyRaw16k      = "raw-floor-16k"
	KeyRPCBench64  = "rpcbench-64conns"
	KeyRaw64       = "raw-floor-64conns"
	KeyIdle        = "rpcbench-idle1000"

	// The rows of debits, each against an rpcserver of its own.
	KeyDebit         = "rpcbench-debit"
	KeyKeyedMemory   = "rpcbench-keyed-memory"
	KeyKeyedSQLite   = "rpcbench-keyed-sqlite"
	KeyKeyedPostgres = "rpcbench-keyed-postgres"

	// The grpc-bank rows: grpc-go's generated Bank client making gets of
	// rpcserver -grpc, the gRPC fault server, and of grpc-go's own
	// server running the same bank handler.
	KeyGRPCBankFault = "grpc-bank-rpcserver"
	KeyGRPCBankGo    = "grpc-bank-grpc-go"

	// The rolling rows: one rpcbench client balancing p2c over
	// rollingServers rpcservers, left alone in one row and restarted in
	// turn, each drained by SIGTERM, in the other.
	KeyRollingSteady  = "rolling-steady"
	KeyRollingRestart = "rolling-restart"
)

// sqlCallsDiv is the CallsDiv of the rows of keyed debits on a SQL store,
// which commit to disk and make a few thousand calls a second where the
// others make tens of thousands.
const sqlCallsDiv = 10

// Server kinds: which process a system's client talks to. A row of
// debits has an rpcserver of its own, named by the system's key, so that
// its balances and records do not meet another row's.
const (
	serverRPC    = "rpcserver"
	serverGRPC   = "grpc"
	serverDRPC   = "drpc"
	serverNetRPC = "netrpc"
	serverRaw    = "raw"
	// serverRawGet is benchpeer's raw server answering with the bank's
	// get (workload.BankGet).
	serverRawGet = "raw-get"
	// serverRPCGRPC is an rpcserver of its own in its gRPC mode, and
	// serverGRPCBank benchpeer's grpc-go Bank server.
	serverRPCGRPC  = "rpcserver-grpc"
	serverGRPCBank = "grpc-bank"
	// serverRolling is the fleet of rollingServers rpcservers of the
	// rolling rows.
	serverRolling = "rolling"
)

// Shapes of load: the row groups besides the standard one (gets of 15
// bytes, one connection shared by G goroutines). Each has its rpcbench row
// and its floor.
const (
	// Shape16k: echoes of 16 KiB, request and answer.
	Shape16k = "16k"
	// Shape64Conns: 64 connections of 8 goroutines each.
	Shape64Conns = "64conns"
)

// Parameters of the shapes.
const (
	// conns64 is the number of connections of the 64conns rows, and
	// perConn64 the goroutines sharing each.
	conns64, perConn64 = 64, 8
	// idleConns is how many idle connections the rpcbench-idle1000 row
	// holds open to rpcserver while it runs at idleG.
	idleConns, idleG = 1000, 64
)

// Client is one system's client: one connection (or, for per-request, one
// dialer; for drpc and the 64conns rows, several connections) that every
// goroutine of a row shares.
type Client interface {
	caller
	Close() error
}

// caller makes calls.
type caller interface {
	// Call makes one call with payload req and returns the answer's
	// payload. An error is a call that did not end OK.
	Call(ctx context.Context, req []byte) ([]byte, error)
}

// workerClient is implemented by a Client of several connections, each
// for some of the row's goroutines: goroutine i of a row makes its calls
// on Worker(i).
type workerClient interface {
	Worker(i int) caller
}

// retryCounter is implemented by clients that may retry inside Call, so a
// row can report how many of its OK calls needed more than one attempt.
type retryCounter interface {
	Retried() int64
}

// System is one row kind of the table.
type System struct {
	Key  string
	Name string // as printed in the table
	// Server is the kind of server process the client talks to.
	Server string
	// Store is the store kind (bank.KindMemory, KindSQLite, KindPostgres)
	// of the rpcserver Server names; empty for the other servers.
	Store string
	// GRPC: the rpcserver Server names runs in its gRPC mode (-grpc), and
	// the row's client speaks gRPC to it.
	GRPC bool
	// Debits: every call is a debit (workload.AppendDebit), and the row
	// checks that the server executed each exactly once. Otherwise every
	// call is a get, or an echo when Echo is set.
	Debits bool
	// Echo, when positive, is the payload size of the row's echoes
	// (workload.EchoRequests); every answer must equal its request.
	Echo int
	// Shape is the row group (Shape16k, Shape64Conns), empty for the
	// standard one. Base marks the group's rpcbench row and Floor its
	// raw-floor row: at each G, "vs rpcbench" and "vs floor" are ratios
	// to them. FloorGet marks the standard group's raw-floor-get row,
	// the floor plus the handler's work: "vs floor-get" divides by it.
	Shape                 string
	Base, Floor, FloorGet bool
	// FixedG, when positive, is the only concurrency the row runs at,
	// whatever Options.G says.
	FixedG int
	// Idle is how many idle connections the driver holds open to the
	// server while the row runs (each made one get, before the warm-up).
	Idle int
	// Fleet, when positive, is how many rpcservers Server names: each
	// on an address of its own, which it keeps when it is restarted.
	// The row's client is dialed with DialFleet, to all of them.
	Fleet int
	// Restarts: while the measured phase runs, the fleet's servers are
	// restarted in turn, each drained by SIGTERM (see roller).
	Restarts bool
	// Default: the system runs when Options.Systems is empty.
	Default bool
	// CallsDiv divides Options.N and Options.Warmup for this system, for
	// one too slow to run the full count.
	CallsDiv int
	// Dial connects a fresh client for one row; g is the row's
	// concurrency, the goroutines that will share it.
	Dial func(ctx context.Context, addr string, g int) (Client, error)
	// DialFleet, in place of Dial when Fleet is set, connects a fresh
	// client of every address of the fleet.
	DialFleet func(ctx context.Context, addrs []string, g int) (Client, error)
}

// Systems returns every system, in the table's row order.
func Systems() []System {
	return []System{
		{Key: KeyRPCBench, Name: "rpcbench", Server: serverRPC, Store: bank.KindMemory, Default: true, CallsDiv: 1, Base: true, Dial: dialRPCBench(false)},
		{Key: KeyIdle, Name: KeyIdle, Server: serverRPC, Store: bank.KindMemory, Default: true, CallsDiv: 1, FixedG: idleG, Idle: idleConns, Dial: dialRPCBench(false)},
		{Key: KeyGoverned, Name: KeyGoverned, Server: serverRPC, Store: bank.KindMemory, Default: true, CallsDiv: 1, Dial: dialGoverned},
		{Key: KeyGRPC, Name: "grpc-go", Server: serverGRPC, Default: true, CallsDiv: 1, Dial: dialGRPC},
		{Key: KeyDRPC, Name: "drpc", Server: serverDRPC, Default: true, CallsDiv: 1, Dial: dialMany(dialDRPC, 1)},
		{Key: KeyNetRPC, Name: "net/rpc", Server: serverNetRPC, Default: true, CallsDiv: 1, Dial: dialNetRPC},
		{Key: KeyPerRequest, Name: "rpcbench-per-request", Server: serverRPC, Store: bank.KindMemory, Default: true, CallsDiv: 10, Dial: dialRPCBench(true)},
		{Key: KeyRaw, Name: "raw-floor", Server: serverRaw, Default: true, CallsDiv: 1, Floor: true, Dial: dialRaw},
		{Key: KeyRawGet, Name: KeyRawGet, Server: serverRawGet, Default: true, CallsDiv: 1, FloorGet: true, Dial: dialRaw},
		{Key: KeyRPCBench16k, Name: KeyRPCBench16k, Server: serverRPC, Store: bank.KindMemory, Default: true, CallsDiv: 1, Echo: workload.EchoSize, Shape: Shape16k, Base: true, Dial: dialEcho},
		{Key: KeyRaw16k, Name: KeyRaw16k, Server: serverRaw, Default: true, CallsDiv: 1, Echo: workload.EchoSize, Shape: Shape16k, Floor: true, Dial: dialRaw},
		{Key: KeyRPCBench64, Name: KeyRPCBench64, Server: serverRPC, Store: bank.KindMemory, Default: true, CallsDiv: 1, Shape: Shape64Conns, Base: true, FixedG: conns64 * perConn64, Dial: dialMany(dialRPCBench(false), perConn64)},
		{Key: KeyRaw64, Name: KeyRaw64, Server: serverRaw, Default: true, CallsDiv: 1, Shape: Shape64Conns, Floor: true, FixedG: conns64 * perConn64, Dial: dialMany(dialRaw, perConn64)},
		{Key: KeyDebit, Name: KeyDebit, Server: KeyDebit, Store: bank.KindMemory, Debits: true, CallsDiv: 1, Dial: dialDebit(false)},
		{Key: KeyKeyedMemory, Name: KeyKeyedMemory, Server: KeyKeyedMemory, Store: bank.KindMemory, Debits: true, CallsDiv: 1, Dial: dialDebit(true)},
		{Key: KeyKeyedSQLite, Name: KeyKeyedSQLite, Server: KeyKeyedSQLite, Store: bank.KindSQLite, Debits: true, CallsDiv: sqlCallsDiv, Dial: dialDebit(true)},
		{Key: KeyKeyedPostgres, Name: KeyKeyedPostgres, Server: KeyKeyedPostgres, Store: bank.KindPostgres, Debits: true, CallsDiv: sqlCallsDiv, Dial: dialDebit(true)},
		{Key: KeyGRPCBankFault, Name: KeyGRPCBankFault, Server: serverRPCGRPC, Store: bank.KindMemory, GRPC: true, CallsDiv: 1, Dial: dialGRPCBank},
		{Key: KeyGRPCBankGo, Name: KeyGRPCBankGo, Server: serverGRPCBank, CallsDiv: 1, Dial: dialGRPCBank},
		{Key: KeyRollingSteady, Name: KeyRollingSteady, Server: serverRolling, Store: bank.KindMemory, Fleet: rollingServers, CallsDiv: 1, DialFleet: dialRolling},
		{Key: KeyRollingRestart, Name: KeyRollingRestart, Server: serverRolling, Store: bank.KindMemory, Fleet: rollingServers, Restarts: true, CallsDiv: 1, DialFleet: dialRolling},
	}
}

// GroupDebits, in -systems, names every row of debits, in table order;
// GroupShapes every row of the shapes of load (the rows of Shape16k and
// Shape64Conns, and rpcbench-idle1000); GroupGRPCBank the two grpc-bank
// rows; GroupRolling the two rolling rows.
const (
	GroupDebits   = "debits"
	GroupShapes   = "shapes"
	GroupGRPCBank = "grpc-bank"
	GroupRolling  = "rolling"
)

// KeyConnsMemory, in -systems, names the measurement of the memory a
// server holds per idle connection (MeasureConnsMemory), which is not a
// row of the table.
const KeyConnsMemory = "conns-memory"

// isShape reports whether s is one of the shapes of load.
func (s *System) isShape() bool { return s.Shape != "" || s.Idle > 0 }

// isGRPCBank reports whether s is one of the grpc-bank rows.
func (s *System) isGRPCBank() bool { return s.Key == KeyGRPCBankFault || s.Key == KeyGRPCBankGo }

// isRolling reports whether s is one of the rolling rows.
func (s *System) isRolling() bool { return s.Server == serverRolling }

// runsAt reports whether the row runs at concurrency g, given the run's
// concurrency levels gs.
func (s *System) runsAt(g int, gs []int) bool {
	if s.FixedG > 0 {
		return g == s.FixedG
	}
	return slices.Contains(gs, g)
}

// splitMeasurements takes KeyConnsMemory out of keys. When keys named it
// and nothing else, rows is empty and not nil's default: no row runs.
func splitMeasurements(keys []string) (rows []string, connsMemory bool) {
	for _, k := range keys {
		if k == KeyConnsMemory {
			connsMemory = true
		} else {
			rows = append(rows, k)
		}
	}
	if connsMemory && rows == nil {
		rows = []string{}
	}
	return rows, connsMemory
}

// selectSystems returns the systems named by keys (table names, or
// GroupDebits, GroupShapes), in the order given, each once; nil means the
// default ones, and an empty slice none.
func selectSystems(keys []string) ([]System, error) {
	all := Systems()
	if keys == nil {
		for _, s := range all {
			if s.Default {
				keys = append(keys, s.Key)
			}
		}
	}
	var out []System
	seen := map[string]bool{}
	for _, k := range keys {
		found := false
		for _, s := range all {
			if k == s.Key || k == s.Name || k == GroupDebits && s.Debits || k == GroupShapes && s.isShape() || k == GroupGRPCBank && s.isGRPCBank() ||
				k == GroupRolling && s.isRolling() {
				if !seen[s.Key] {
					out = append(out, s)
					seen[s.Key] = true
				}
				found = true
			}
		}
		if !found {
			valid := []string{GroupDebits, GroupShapes, GroupGRPCBank, GroupRolling, KeyConnsMemory}
			for _, s := range all {
				valid = append(valid, s.Key)
			}
			return nil, fmt.Errorf("%w: unknown system %q, want one of %s", ErrOptions, k, strings.Join(valid, ","))
		}
	}
	return out, nil
}

// RPCBenchConfig is the client configuration of the rpcbench rows: the
// defaults, with timeouts long enough that no call times out under load.
func RPCBenchConfig(connPerCall bool) client.Config {
	cfg := client.DefaultConfig()
	cfg.AttemptTimeout = 5 * time.Second
	cfg.Deadline = 10 * time.Second
	cfg.ConnPerCall = connPerCall
	return cfg
}

// GovernedConfig is the client configuration of the rpcbench-governed
// row: RPCBenchConfig(false) with every governance that does not change
// what the row does, so that the row measures what it costs. The retry
// budget and the breaker are those a service would set; neither acts on
// a run whose every attempt is answered. The in-flight cap is 4g, so
// that the g goroutines never meet it. There is no rate limit: any limit
// that never refuses a call is one no service would set, and one that
// does would measure the limit, not the client.
func GovernedConfig(g int) client.Config {
	cfg := RPCBenchConfig(false)
	cfg.RetryBudget = &client.RetryBudget{MaxTokens: 10, TokenRatio: 0.1}
	cfg.Breaker = &client.BreakerConfig{
		Window:      10 * time.Second,
		Bucket:      time.Second,
		MinCalls:    100,
		FailureRate: 0.5,
		OpenFor:     time.Second,
		Probes:      5,
	}
	cfg.MaxInFlight = 4 * g
	return cfg
}

type rpcbenchClient struct {
	c       *client.Client
	retried atomic.Int64
}

func dialRPCBench(connPerCall bool) func(context.Context, string, int) (Client, error) {
	return func(_ context.Context, addr string, _ int) (Client, error) {
		c, err := client.New(addr, RPCBenchConfig(connPerCall))
		if err != nil {
			return nil, err
		}
		return &rpcbenchClient{c: c}, nil
	}
}

// StatusError is a call rpcbench ended with a status other than OK.
type StatusError struct {
	Status  proto.Status
	Payload string
	Err     error // the last attempt's error, if there was no answer
}

func (e *StatusError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("rpcbench: %v: %v", e.Status, e.Err)
	}
	return fmt.Sprintf("rpcbench: %v: %q", e.Status, e.Payload)
}

func (e *StatusError) Unwrap() error { return e.Err }

func (c *rpcbenchClient) Call(ctx context.Context, req []byte) ([]byte, error) {
	return c.do(ctx, client.Call{Method: bank.MethodGet, Idempotent: true, Payload: req})
}

// do makes call and returns the answer's payload, or an error unless
// it ended OK.
func (c *rpcbenchClient) do(ctx context.Context, call client.Call) ([]byte, error) {
	r := c.c.Do(ctx, call)
	if r.Attempts > 1 {
		c.retried.Add(1)
	}
	if r.Status != proto.StatusOK {
		return nil, &StatusError{Status: r.Status, Payload: string(r.Payload), Err: r.Err}
	}
	return r.Payload, nil
}

// RollingConfig is the client configuration of the rolling rows:
// RPCBenchConfig(false), balancing p2c over the fleet's addresses.
func RollingConfig() client.Config {
	cfg := RPCBenchConfig(false)
	cfg.Balancer = client.P2C
	return cfg
}

func dialRolling(_ context.Context, addrs []string, _ int) (Client, error) {
	c, err := client.NewMulti(addrs, RollingConfig())
	if err != nil {
		return nil, err
	}
	return &rpcbenchClient{c: c}, nil
}

func dialGoverned(_ context.Context, addr string, g int) (Client, error) {
	c, err := client.New(addr, GovernedConfig(g))
	if err != nil {
		return nil, err
	}
	return &rpcbenchClient{c: c}, nil
}

func (c *rpcbenchClient) Close() error   { return c.c.Close() }
func (c *rpcbenchClient) Retried() int64 { return c.retried.Load() }

// DrainedResent is how many attempts the client re-sent because a
// server's drain frame said it had not taken them.
func (c *rpcbenchClient) DrainedResent() int64 { return c.c.Stats().DrainedResent }

// debitClient is a Client whose every call is a debit, each with a fresh
// idempotency key when keyed. It counts retries and reads rpcserver's
// counters.
type debitClient struct {
	rpcbenchClient
	keyed bool
}

func dialDebit(keyed bool) func(context.Context, string, int) (Client, error) {
	return func(_ context.Context, addr string, _ int) (Client, error) {
		c, err := client.New(addr, RPCBenchConfig(false))
		if err != nil {
			return nil, err
		}
		return &debitClient{rpcbenchClient: rpcbenchClient{c: c}, keyed: keyed}, nil
	}
}

// Call makes one debit with payload req. A keyed debit may be re-sent
// after an attempt whose outcome is unknown; one without a key may not.
func (c *debitClient) Call(ctx context.Context, req []byte) ([]byte, error) {
	call := client.Call{Method: bank.MethodDebit, Payload: req}
	if c.keyed {
		call.Key = newKey()
	}
	return c.do(ctx, call)
}

// Counters reads rpcserver's counters.
func (c *rpcbenchClient) Counters(ctx context.Context) (serverapi.Counters, error) {
	r := c.c.Do(ctx, client.Call{Method: serverapi.MethodStats, Idempotent: true})
	if r.Status != proto.StatusOK {
		return serverapi.Counters{}, &StatusError{Status: r.Status, Payload: string(r.Payload), Err: r.Err}
	}
	return serverapi.ParseCounters(r.Payload)
}

// newKey returns a fresh idempotency key: 128 random bits in hex, as a
// client that makes a UUID for each operation sends.
func newKey() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	return hex.EncodeToString(b[:])
}

// dialEcho connects an rpcbench client whose calls are echoes.
func dialEcho(_ context.Context, addr string, _ int) (Client, error) {
	c, err := client.New(addr, RPCBenchConfig(false))
	if err != nil {
		return nil, err
	}
	return &echoClient{rpcbenchClient: rpcbenchClient{c: c}}, nil
}

// echoClient is a Client whose every call is an echo: idempotent, no key
// (rpcserver refuses one).
type echoClient struct{ rpcbenchClient }

func (c *echoClient) Call(ctx context.Context, req []byte) ([]byte, error) {
	return c.do(ctx, client.Call{Method: bank.MethodEcho, Idempotent: true, Payload: req})
}

func dialGRPC(_ context.Context, addr string, _ int) (Client, error) {
	return grpcpeer.Dial(addr)
}

func dialGRPCBank(_ context.Context, addr string, _ int) (Client, error) {
	return grpcbank.Dial(addr)
}

func dialNetRPC(ctx context.Context, addr string, _ int) (Client, error) {
	return netrpcpeer.Dial(ctx, addr)
}

func dialRaw(ctx context.Context, addr string, _ int) (Client, error) {
	return rawwire.Dial(ctx, addr)
}

func dialDRPC(ctx context.Context, addr string, _ int) (Client, error) {
	return drpcpeer.Dial(ctx, addr)
}

// dialMany returns a Dial that connects ⌈g/per⌉ clients with dial, one
// for every per goroutines of the row: goroutine i calls on client i/per.
func dialMany(dial func(context.Context, string, int) (Client, error), per int) func(context.Context, string, int) (Client, error) {
	return func(ctx context.Context, addr string, g int) (Client, error) {
		m := &multiClient{per: per}
		for range (g + per - 1) / per {
			c, err := dial(ctx, addr, per)
			if err != nil {
				m.Close()
				return nil, err
			}
			m.cs = append(m.cs, c)
		}
		return m, nil
	}
}

// multiClient is a Client of several connections, each serving per of a
// row's goroutines.
type multiClient struct {
	cs   []Client
	per  int
	next atomic.Uint64 // round robin of Call
}

// Worker returns the client of goroutine i.
func (m *multiClient) Worker(i int) caller { return m.cs[(i/m.per)%len(m.cs)] }

// Call makes the call on the clients in turn; the rows call on Worker(i)
// instead, so that no two goroutines share a client beyond per.
func (m *multiClient) Call(ctx context.Context, req []byte) ([]byte, error) {
	return m.cs[m.next.Add(1)%uint64(len(m.cs))].Call(ctx, req)
}

// Close closes every client.
func (m *multiClient) Close() error {
	var errs []error
	for _, c := range m.cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Retried sums the retries of the clients that count them.
func (m *multiClient) Retried() int64 {
	var n int64
	for _, c := range m.cs {
		if rc, ok := c.(retryCounter); ok {
			n += rc.Retried()
		}
	}
	return n
}
