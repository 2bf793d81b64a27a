package main

import (
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rpcbench/rpcbench/internal/grpcwire"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// grpcFaultFlags is the -grpc-fault flag: gRPC fault rules, refused when
// they name a method the handler does not serve.
type grpcFaultFlags struct {
	methods []string
	rules   []grpcwire.Fault
}

func (f *grpcFaultFlags) String() string {
	s := make([]string, len(f.rules))
	for i, r := range f.rules {
		s[i] = r.String()
	}
	return strings.Join(s, "; ")
}

func (f *grpcFaultFlags) Set(v string) error {
	ft, err := grpcwire.ParseFault(v)
	if err != nil {
		return err
	}
	if err := ft.CheckMethod(f.methods); err != nil {
		return err
	}
	f.rules = append(f.rules, ft)
	return nil
}

// forGRPC reports whether a ctl.fault or ctl.stats payload carries the
// field wire=grpc, which sends it to the gRPC side.
func forGRPC(payload []byte) bool {
	return slices.Contains(strings.Fields(string(payload)), "wire="+serverapi.WireGRPC)
}

// grpcControl is the server.Config.Control of the gRPC mode: ctl.fault
// and ctl.stats with wire=grpc reach the gRPC side; ctl.clear clears
// both sides' rules (the gRPC side's here, rpcbench's by the server
// itself); everything else is the server's.
func grpcControl(g *grpcwire.Server, lg *slog.Logger) func(string, []byte) (proto.Status, string, bool) {
	return func(method string, payload []byte) (proto.Status, string, bool) {
		switch method {
		case serverapi.MethodFault:
			if !forGRPC(payload) {
				return 0, "", false
			}
			f, err := grpcwire.ParseFault(string(payload))
			if err == nil {
				err = g.AddFault(f)
			}
			if err != nil {
				return proto.StatusInvalidArgument, err.Error(), true
			}
			return proto.StatusOK, f.String(), true
		case serverapi.MethodStats:
			if !forGRPC(payload) {
				return 0, "", false
			}
			return proto.StatusOK, g.Counters().String(), true
		case serverapi.MethodClear:
			g.ClearFaults()
		}
		return 0, "", false
	}
}

// sniffTimeout is how long a new connection may stay silent before it
// is taken for rpcbench's wire: an rpcbench client may connect before
// its first call, while a gRPC client sends its preface at once.
const sniffTimeout = time.Second

// splitListener accepts on ln and hands each connection to one of two
// listeners by its first byte, peeked (MSG_PEEK) so that nothing is
// consumed and the connection is passed on as the *net.TCPConn it is:
// 'P', which begins the HTTP/2 client preface, goes to h2; anything else
// (an rpcbench frame begins with 0x00, its length being at most 64 KiB),
// a silence of sniffTimeout, or a connection that cannot be peeked, goes
// to rpc. Closing either returned listener closes ln; an accept error
// other than that is waited out, as the server's own accept loop does.
func splitListener(ln net.Listener) (rpc, h2 net.Listener) {
	done := make(chan struct{})
	var once sync.Once
	stop := func() { once.Do(func() { close(done); ln.Close() }) }
	r := &chanListener{ln: ln, conns: make(chan net.Conn), done: done, stop: stop}
	h := &chanListener{ln: ln, conns: make(chan net.Conn), done: done, stop: stop}
	go func() {
		defer stop()
		for {
			nc, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				// Out of file descriptors, or a connection reset before
				// it was accepted: no reason to stop serving.
				select {
				case <-time.After(5 * time.Millisecond):
				case <-done:
					return
				}
				continue
			}
			go func() {
				to := r
				if peekByte(nc) == 'P' {
					to = h
				}
				select {
				case to.conns <- nc:
				case <-done:
					nc.Close()
				}
			}()
		}
	}()
	return r, h
}

// peekByte returns a connection's first byte without consuming it, or 0
// when it cannot tell within sniffTimeout.
func peekByte(nc net.Conn) byte {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return 0
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return 0
	}
	tc.SetReadDeadline(time.Now().Add(sniffTimeout))
	defer tc.SetReadDeadline(time.Time{})
	var b [1]byte
	var n int
	err = raw.Read(func(fd uintptr) bool {
		var rerr error
		n, _, rerr = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK)
		return !errors.Is(rerr, unix.EAGAIN)
	})
	if err != nil || n != 1 {
		return 0
	}
	return b[0]
}

// chanListener is one side of splitListener.
type chanListener struct {
	ln    net.Listener
	conns chan net.Conn
	done  chan struct{}
	stop  func()
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case nc := <-l.conns:
		return nc, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error   { l.stop(); return nil }
func (l *chanListener) Addr() net.Addr { return l.ln.Addr() }
