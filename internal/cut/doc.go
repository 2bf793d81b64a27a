// Package cut drives a client under test: an adapter process, in any
// language, that speaks the JSON-lines protocol of adapters/PROTOCOL.md
// ("rpcbench-adapter/1") and makes calls through the RPC library it
// links.
//
// Start runs the adapter in a process group of its own and completes the
// init handshake; Adapter.Do sends one call and waits for its answer,
// concurrently with any others; Adapter.Close ends the session and
// leaves no process behind. Every way an adapter can break the protocol
// is an *Error whose Kind names it, quoting the tail of the adapter's
// stderr: a scenario reports it as an ERROR, never as a finding.
//
// The adapter only acts: the harness judges what happened, and the
// server's log, not the adapter, says what executed.
package cut
