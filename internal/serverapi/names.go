package serverapi

import (
	"fmt"
	"net"
	"strings"
	"unicode"
)

// AnnouncePrefix starts the one line rpcserver prints to stdout once it
// listens; the bound address follows.
const AnnouncePrefix = "RPCSERVER LISTEN "

// Announce returns the announce line for addr, without its newline.
func Announce(addr string) string { return AnnouncePrefix + addr }

// ParseAnnounce returns the address in an announce line: host:port, as
// rpcserver prints its listener's. A line without an address, or with
// one that lacks its port, is an error, never an address to dial.
func ParseAnnounce(line string) (string, error) {
	addr, ok := strings.CutPrefix(line, AnnouncePrefix)
	if !ok || addr == "" {
		return "", fmt.Errorf("serverapi: rpcserver printed %q, want %q<addr>", line, AnnouncePrefix)
	}
	if strings.TrimSpace(addr) == "" {
		return "", fmt.Errorf("serverapi: rpcserver announced no address: %q", line)
	}
	if strings.ContainsFunc(addr, unicode.IsSpace) {
		return "", fmt.Errorf("serverapi: rpcserver announced %q, not host:port", addr)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("serverapi: rpcserver announced %q: %w", addr, err)
	}
	if port == "" {
		return "", fmt.Errorf("serverapi: rpcserver announced %q, with no port", addr)
	}
	return addr, nil
}

// rpcserver's flags, by name without the dash.
const (
	FlagAddr         = "addr"
	FlagLog          = "log"
	FlagStartDelay   = "start-delay"
	FlagCPUProfile   = "cpuprofile"
	FlagWorkers      = "workers"
	FlagQueue        = "queue"
	FlagQueuePerConn = "queue-per-conn"
	FlagChunk        = "chunk"
	FlagChunkWindow  = "chunk-window"
	FlagMaxConns     = "max-conns"
	FlagMaxOutBytes  = "max-out-bytes"
	FlagWriteTimeout = "write-timeout"
	FlagFault        = "fault"
	FlagLogExec      = "log-exec"
	FlagStore        = "store"
	FlagDedupTTL     = "dedup-ttl"
	FlagDedupLease   = "dedup-lease"
	FlagCrash        = "crash"
	// FlagDrainTimeout bounds a drain; 0 makes SIGTERM close at once.
	FlagDrainTimeout = "drain-timeout"
	// FlagGRPC turns on the gRPC mode: the listener serves gRPC (h2c)
	// besides rpcbench's wire, told apart by a connection's first byte.
	FlagGRPC = "grpc"
	// FlagGRPCFault is a gRPC fault rule, repeatable (grpcwire.ParseFault).
	FlagGRPCFault = "grpc-fault"
	// FlagReadTimeout bounds, on both wires, how long a connection may
	// take to finish its preface, a frame it started or a header block:
	// a peer trickling bytes (slowloris) is closed when it passes.
	FlagReadTimeout = "read-timeout"
	// FlagKeepAlive is the TCP keepalive idle time on both wires; the
	// probe interval follows from it and -write-timeout (SPEC.md).
	FlagKeepAlive = "keepalive"
	// FlagGRPCMaxStreams is the gRPC side's
	// SETTINGS_MAX_CONCURRENT_STREAMS.
	FlagGRPCMaxStreams = "grpc-max-streams"
	// FlagMaxOutTotal bounds the gRPC side's unwritten answer bytes
	// across all its connections, as -max-out-bytes does per connection.
	FlagMaxOutTotal = "max-out-total"
)

// WireGRPC is the value of KeyWire on the gRPC side's events, and the
// "wire=grpc" field that sends ctl.fault and ctl.stats to the gRPC side
// in the gRPC mode.
const WireGRPC = "grpc"

// Control methods. The transport answers them on the connection's reader,
// without queueing, so they work while every worker is busy.
const (
	MethodStats = "ctl.stats" // answers the counters, in Counters.String form
	MethodFault = "ctl.fault" // payload: a fault rule; answers it in canonical form
	MethodClear = "ctl.clear" // removes every fault rule
	MethodPing  = "ctl.ping"  // answers OK, empty
	// MethodHello names the connection's role for the log: payload
	// "role=NAME". The driver's own control connections say
	// role=control, so that a reader of the log can tell their requests
	// from the scenario's.
	MethodHello = "ctl.hello"
	// MethodCancel cancels a business request sent earlier on the same
	// connection: payload "id=N". A request with that ID still in the
	// queue is dropped when a worker takes it, never executed; one
	// already executing runs to completion. Answers OK with
	// "found=true" when a queued request is marked, "found=false"
	// otherwise (unknown, executing or already answered).
	MethodCancel = "ctl.cancel"
	// MethodDrain starts a drain of the whole server (SPEC.md, "Drain"),
	// bounded by its drain timeout, and answers OK before the drain
	// frame goes out; a drain already under way is left alone.
	MethodDrain = "ctl.drain"
)

// RoleControl is the role a driver's control connections declare.
const RoleControl = "control"

// IsControl reports whether method is a control method.
func IsControl(method string) bool {
	switch method {
	case MethodStats, MethodFault, MethodClear, MethodPing, MethodHello, MethodCancel, MethodDrain:
		return true
	}
	return false
}

// Crash points for -crash: rpcserver kills itself with SIGKILL at the
// first keyed debit that reaches the point.
const (
	// CrashBeforeCommit: the debit and its record are written in the
	// store's transaction, which is not committed.
	CrashBeforeCommit = "before-commit"
	// CrashAfterCommit: both are committed; the answer is not sent.
	CrashAfterCommit = "after-commit"
)
