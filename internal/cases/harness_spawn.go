package cases

import (
	"net"
	"os"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/serverproc"
)

// serverOpts are the rpcserver settings a scenario chooses; startServer
// fills in Bin, LogPath and Stderr.
type serverOpts = serverproc.RPCServer

// server is a running rpcserver process.
type server struct {
	*serverproc.Proc
	LogPath string
	// ctlConns counts connections opened by control calls, so that
	// counters can report the scenario's own connections apart.
	ctlConns int64
}

// startServer starts an rpcserver process that is stopped (SIGTERM, then
// SIGKILL after a grace period) when the scenario ends. On Linux the child
// is also killed if this process dies.
func (t *T) startServer(o serverOpts) *server {
	s := t.startServerNoWait(o)
	if err := s.Await(t.ctx, o.StartDelay+serverproc.StartTimeout); err != nil {
		t.Fatalf("start rpcserver: %v", err)
	}
	return s
}

// startServerNoWait is startServer without waiting for the announce line,
// for a server that binds late; the scenario calls Await.
func (t *T) startServerNoWait(o serverOpts) *server { return t.spawnServer(o, nil) }

// spawnServer starts rpcserver with o's flags followed by extra, which
// are flags serverOpts has no field for.
func (t *T) spawnServer(o serverOpts, extra []string) *server {
	if o.Exec != nil && len(extra) > 0 {
		// Exec rewrites the command line; flags appended after it would
		// be the wrapper's, not rpcserver's.
		t.Fatalf("start rpcserver: extra flags %q with an Exec wrapper", extra)
	}
	o.Bin, o.LogPath, o.Stderr = t.env.ServerBin, t.logPath(), os.Stderr
	spec := o.Spec()
	spec.Args = append(spec.Args, extra...)
	p, err := serverproc.Start(t.ctx, spec)
	if err != nil {
		t.Fatalf("start rpcserver: %v", err)
	}
	t.cleanup(p.Stop)
	return &server{Proc: p, LogPath: o.LogPath}
}

// freeAddr returns a loopback address that nothing listens on at the
// moment of the call: the kernel picks the port, which is then released.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// client returns a client for addr that is closed when the scenario ends.
func (t *T) client(addr string, cfg client.Config) *client.Client {
	return t.multiClient([]string{addr}, cfg)
}

// controlCall sends method to the server over a connection of its own and
// returns the OK answer. The connection is counted in s.ctlConns so
// scenarios can tell their own connections from these.
func (t *T) controlCall(s *server, method, payload string) client.Result {
	c, err := client.New(s.Addr, client.DefaultConfig())
	if err != nil {
		t.Fatalf("control client: %v", err)
	}
	defer c.Close()
	// Declared first, on the same connection, so that the server's log
	// tells this connection's requests from the scenario's.
	hello := c.Do(t.ctx, client.Call{Method: serverapi.MethodHello, Idempotent: true, Payload: []byte("role=" + serverapi.RoleControl)})
	r := c.Do(t.ctx, client.Call{Method: method, Idempotent: method != serverapi.MethodFault, Payload: []byte(payload)})
	s.ctlConns += c.Stats().ConnsOpened
	if hello.Status != proto.StatusOK {
		t.Fatalf("%s: %v %s (%v)", serverapi.MethodHello, hello.Status, hello.Payload, hello.Err)
	}
	if r.Status != proto.StatusOK {
		t.Fatalf("%s %q: %v %s (%v)", method, payload, r.Status, r.Payload, r.Err)
	}
	return r
}

// control is controlCall with the answer parsed as key=value fields.
func (t *T) control(s *server, method, payload string) serverapi.Fields {
	r := t.controlCall(s, method, payload)
	fs, err := serverapi.ParseFields(r.Payload)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return fs
}

// counters are the server's counters as a scenario sees them.
type counters struct {
	serverapi.Counters
	// ConnsScenario counts the connections the scenario itself opened:
	// ConnsAccepted less the control calls' own.
	ConnsScenario int64
}

// counters returns the server's counters. A counter the server did not
// report, or one this program does not know, fails the scenario.
func (t *T) counters(s *server) counters {
	r := t.controlCall(s, serverapi.MethodStats, "")
	c, err := serverapi.ParseCounters(r.Payload)
	if err != nil {
		t.Fatalf("%s: %v", serverapi.MethodStats, err)
	}
	return counters{Counters: c, ConnsScenario: c.ConnsAccepted - s.ctlConns}
}

// balance reads an account's balance over a control connection.
func (t *T) balance(s *server, account string) int64 {
	fs := t.control(s, bank.MethodGet, "account="+account)
	b, err := fs.Int("balance", -1)
	if err != nil {
		t.Fatalf("balance of %s: %v", account, err)
	}
	return b
}

// events returns the events the server has logged so far. The log file
// may hold earlier servers' events before them (a scenario run again with
// --count appends to the same file): they start at the LISTEN event with
// the server's address.
func (t *T) events(s *server) []serverapi.Event {
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

// countEvents counts the events for which match holds.
func countEvents(evs []serverapi.Event, match func(serverapi.Event) bool) int {
	n := 0
	for _, e := range evs {
		if match(e) {
			n++
		}
	}
	return n
}
