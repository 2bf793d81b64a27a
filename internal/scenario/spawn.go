package scenario

import (
	"net"
	"os"
	"slices"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/serverproc"
)

// ServerOpts are the rpcserver settings a scenario chooses; StartServer
// fills in Bin, LogPath and Stderr.
type ServerOpts = serverproc.RPCServer

// Server is a running rpcserver process.
type Server struct {
	*serverproc.Proc
	LogPath string
	// ctlConns counts connections opened by control calls, so that
	// counters can report the scenario's own connections apart.
	ctlConns int64
}

// StartServer starts an rpcserver process that is stopped (SIGTERM, then
// SIGKILL after a grace period) when the scenario ends. On Linux the child
// is also killed if this process dies.
func (t *T) StartServer(o ServerOpts) *Server {
	s := t.StartServerNoWait(o)
	if err := s.Await(t.Ctx, o.StartDelay+serverproc.StartTimeout); err != nil {
		t.Fatalf("start rpcserver: %v", err)
	}
	return s
}

// StartServerNoWait is StartServer without waiting for the announce line,
// for a server that binds late; the scenario calls Await.
func (t *T) StartServerNoWait(o ServerOpts) *Server { return t.spawnServer(o, nil) }

// spawnServer starts rpcserver with o's flags followed by extra, which
// are flags ServerOpts has no field for.
func (t *T) spawnServer(o ServerOpts, extra []string) *Server {
	if o.Exec != nil && len(extra) > 0 {
		// Exec rewrites the command line; flags appended after it would
		// be the wrapper's, not rpcserver's.
		t.Fatalf("start rpcserver: extra flags %q with an Exec wrapper", extra)
	}
	o.Bin, o.LogPath, o.Stderr = t.Env.ServerBin, t.logPath(), os.Stderr
	spec := o.Spec()
	spec.Args = append(spec.Args, extra...)
	p, err := serverproc.Start(t.Ctx, spec)
	if err != nil {
		t.Fatalf("start rpcserver: %v", err)
	}
	t.Cleanup(p.Stop)
	return &Server{Proc: p, LogPath: o.LogPath}
}

// FreeAddr returns a loopback address that nothing listens on at the
// moment of the call: the kernel picks the port, which is then released.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// Client returns a client for addr that is closed when the scenario ends.
func (t *T) Client(addr string, cfg client.Config) *client.Client {
	return t.MultiClient([]string{addr}, cfg)
}

// ControlCall sends method to the server over a connection of its own and
// returns the OK answer. The connection is counted in s.ctlConns so
// scenarios can tell their own connections from these.
func (t *T) ControlCall(s *Server, method, payload string) client.Result {
	c, err := client.New(s.Addr, client.DefaultConfig())
	if err != nil {
		t.Fatalf("control client: %v", err)
	}
	defer c.Close()
	// Declared first, on the same connection, so that the server's log
	// tells this connection's requests from the scenario's.
	hello := c.Do(t.Ctx, client.Call{Method: serverapi.MethodHello, Idempotent: true, Payload: []byte("role=" + serverapi.RoleControl)})
	r := c.Do(t.Ctx, client.Call{Method: method, Idempotent: method != serverapi.MethodFault, Payload: []byte(payload)})
	s.ctlConns += c.Stats().ConnsOpened
	if hello.Status != proto.StatusOK {
		t.Fatalf("%s: %v %s (%v)", serverapi.MethodHello, hello.Status, hello.Payload, hello.Err)
	}
	if r.Status != proto.StatusOK {
		t.Fatalf("%s %q: %v %s (%v)", method, payload, r.Status, r.Payload, r.Err)
	}
	return r
}

// Control is ControlCall with the answer parsed as key=value fields.
func (t *T) Control(s *Server, method, payload string) serverapi.Fields {
	r := t.ControlCall(s, method, payload)
	fs, err := serverapi.ParseFields(r.Payload)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return fs
}

// Counters are the server's counters as a scenario sees them.
type Counters struct {
	serverapi.Counters
	// ConnsScenario counts the connections the scenario itself opened:
	// ConnsAccepted less the control calls' own.
	ConnsScenario int64
}

// Counters returns the server's counters. A counter the server did not
// report, or one this program does not know, fails the scenario.
func (t *T) Counters(s *Server) Counters {
	r := t.ControlCall(s, serverapi.MethodStats, "")
	c, err := serverapi.ParseCounters(r.Payload)
	if err != nil {
		t.Fatalf("%s: %v", serverapi.MethodStats, err)
	}
	return Counters{Counters: c, ConnsScenario: c.ConnsAccepted - s.ctlConns}
}

// GRPCCounters returns the gRPC side's counters (ctl.stats wire=grpc)
// of a server started with -grpc. Control calls are made on rpcbench's
// wire, so every connection the gRPC side counts is the scenario's own.
func (t *T) GRPCCounters(s *Server) serverapi.Counters {
	r := t.ControlCall(s, serverapi.MethodStats, serverapi.KeyWire+"="+serverapi.WireGRPC)
	c, err := serverapi.ParseCounters(r.Payload)
	if err != nil {
		t.Fatalf("%s %s=%s: %v", serverapi.MethodStats, serverapi.KeyWire, serverapi.WireGRPC, err)
	}
	return c
}

// Balance reads an account's balance over a control connection.
func (t *T) Balance(s *Server, account string) int64 {
	fs := t.Control(s, bank.MethodGet, "account="+account)
	b, err := fs.Int("balance", -1)
	if err != nil {
		t.Fatalf("balance of %s: %v", account, err)
	}
	return b
}

// Events returns the events the server has logged so far. The log file
// may hold earlier servers' events before them (a scenario run again with
// --count appends to the same file): they start at the LISTEN event with
// the server's address.
func (t *T) Events(s *Server) []serverapi.Event {
	f, err := os.Open(s.LogPath)
	if err != nil {
		t.Fatalf("server log: %v", err)
	}
	defer f.Close()
	evs, err := serverapi.ReadEvents(f)
	if err != nil {
		t.Fatalf("server log %s: %v", s.LogPath, err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Name == serverapi.EventListen && evs[i].Text(serverapi.KeyAddr) == s.Addr {
			return evs[i:]
		}
	}
	t.Fatalf("server log %s has no %s event for %s", s.LogPath, serverapi.EventListen, s.Addr)
	return nil
}

// CountEvents counts the events for which match holds.
func CountEvents(evs []serverapi.Event, match func(serverapi.Event) bool) int {
	n := 0
	for _, e := range evs {
		if match(e) {
			n++
		}
	}
	return n
}

// AwaitEvent waits until s has logged an event for which match holds, and
// returns it; none within SettleTimeout ends the scenario.
func (t *T) AwaitEvent(s *Server, what string, match func(serverapi.Event) bool) serverapi.Event {
	var found serverapi.Event
	if !WaitFor(SettleTimeout, func() bool {
		i := slices.IndexFunc(t.Events(s), match)
		if i >= 0 {
			found = t.Events(s)[i]
		}
		return i >= 0
	}) {
		t.Fatalf("%s never happened on the server", what)
	}
	return found
}

// MultiClient returns a client of addrs that is closed when the scenario
// ends.
func (t *T) MultiClient(addrs []string, cfg client.Config) *client.Client {
	if cfg.Trace == nil {
		cfg.Trace = t.Trace.Hook()
	}
	c, err := client.NewMulti(addrs, cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// SettleTimeout bounds how long a server may take to reap an attack's
// connections once they are closed, to take in an attack's connections
// in the first place, and to log an event a scenario awaits.
const SettleTimeout = 5 * time.Second
