package target

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/net/http2"

	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/rawgrpc"
)

// InvRefusedNotExecuted: a stream the service refused, past the
// SETTINGS_MAX_CONCURRENT_STREAMS it announced, never executes: a
// client sends a refused call again, on the word of REFUSED_STREAM.
const InvRefusedNotExecuted = "srv_refused_not_executed"

// InServerSection reports whether row name answers a server-section
// scenario (its lines carry scenario=grpcserver_...), so that the shipped
// server adapters' pins judge it too; the others are target's own.
func InServerSection(name string) bool {
	for _, r := range rows() {
		if r.name == name {
			return strings.HasPrefix(r.scenario, "grpcserver_")
		}
	}
	return false
}

// maxStreamsRow bounds the streams the row opens: a service announcing
// more, or no limit, leaves it n/a.
const maxStreamsRow = 512

// streamsPastLimit fills a connection with calls whose bodies it holds
// back, as many as the service's SETTINGS_MAX_CONCURRENT_STREAMS allows,
// opens one whole call more, then sends the held bodies.
func streamsPastLimit(r *rowT) {
	c := r.dial()
	ctx, cancel := context.WithTimeout(r.Ctx, answerTimeout)
	n, set, err := c.MaxStreams(ctx)
	cancel()
	if err != nil {
		r.Errored("the service's SETTINGS: %v", err)
	}
	if !set || n > maxStreamsRow {
		why := "no SETTINGS_MAX_CONCURRENT_STREAMS"
		r.Field("maxStreams", "none")
		if set {
			why = fmt.Sprintf("SETTINGS_MAX_CONCURRENT_STREAMS %d, more than the %d this row opens", n, maxStreamsRow)
			r.Field("maxStreams", n)
		}
		r.Field("executions", "unknown")
		r.unknown(InvRefusedNotExecuted)
		r.NA = "the service announces " + why
		return
	}
	r.Field("maxStreams", n)
	if r.s.Oracle == nil {
		r.Field("executions", "unknown")
		r.unknown(InvRefusedNotExecuted)
		return
	}
	k := r.counter()
	k.before()
	// n calls whose HEADERS alone are sent: each an open stream the
	// service waits on; then one whole call more.
	held := make([]*rawgrpc.Stream, 0, n)
	for range n {
		st, err := c.Open(rawgrpc.Request{Path: r.s.Method.Path, Timeout: "30S", Hold: true})
		if err != nil {
			r.Fatalf("open: %v", err)
		}
		held = append(held, st)
	}
	extra, err := c.Open(rawgrpc.Request{Path: r.s.Method.Path, Timeout: "30S", Message: r.s.Request})
	if err != nil {
		r.Fatalf("open: %v", err)
	}
	res, err := r.s.wait(r.Ctx, extra)
	if err != nil && r.Ctx.Err() != nil {
		r.Fatalf("%v", err)
	}
	r.Field("extra", outcomeOf(res))
	// The held calls cannot execute before their bodies come: what the
	// oracle counts now (Settle after the answer) is the call past the
	// limit alone.
	execs := k.after()
	r.Field("executions", execs)
	// Then the held calls' bodies: they are served, and only then.
	for _, st := range held {
		if err := st.Send(r.s.Request, true); err != nil {
			break // the connection is gone: their results say so
		}
	}
	okHeld := 0
	for _, st := range held {
		res, err := r.s.wait(r.Ctx, st)
		if err != nil && r.Ctx.Err() != nil {
			r.Fatalf("%v", err)
		}
		if res.HasCode && res.Code == 0 {
			okHeld++
		}
	}
	r.Field("heldServed", okHeld)
	k.after() // the held calls' executions, not judged here
	k.done()
	// Refused: reset REFUSED_STREAM (or PROTOCOL_ERROR, RFC 9113 5.1.2),
	// or the connection closed on it. Served past its own limit, or
	// failed otherwise, nothing was refused: its answer's truth is
	// srv_ok_iff_executed's, another row's.
	refused := err == nil && !res.HasCode && (res.WasReset && (res.Reset == http2.ErrCodeRefusedStream || res.Reset == http2.ErrCodeProtocol) || res.ConnClosed)
	if !refused {
		r.observe(InvRefusedNotExecuted, judge.Holds(true), "")
		return
	}
	r.observe(InvRefusedNotExecuted, judge.Holds(execs == 0),
		fmt.Sprintf("the call past the limit was refused (%s), yet executed %d times", outcomeOf(res), execs))
}
