package hostile

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/net/http2"

	"github.com/rpcbench/rpcbench/internal/rawgrpc"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// The limits and loads of hostile_grpc_zero_window. Every attacker
// grants no window (SETTINGS_INITIAL_WINDOW_SIZE 0), so each answer's
// HEADERS come and its DATA stays queued on the server for good, holding
// its stream slot and its bytes.
const (
	zwMaxStreams = 8 // -grpc-max-streams
	// zwEcho is a big echo's payload: its request message (tag, 2-byte
	// length, payload) fits the 16384-byte message limit.
	zwEcho = 16000
	// zwAnswer is a big echo's answer as the output limits count it:
	// the DATA of its message, 5-byte prefix, tag and length included.
	zwAnswer = 5 + 3 + zwEcho
	// zwTiny is a small echo's payload, and zwTinyAnswer its answer.
	zwTiny       = 8
	zwTinyAnswer = 5 + 2 + zwTiny
	// zwPerConn answers a connection may hold: -max-out-bytes is
	// zwPerConn big answers (rpcbench's wire, which shares the flag,
	// needs at least a frame's 65540 bytes).
	zwPerConn    = 5
	zwMaxOutConn = zwPerConn * zwAnswer
	// zwStreamConns open small echoes until -grpc-max-streams refuses
	// one; they hold zwMaxStreams small answers each.
	zwStreamConns = 8
	zwTinyHeld    = zwStreamConns * zwMaxStreams * zwTinyAnswer
	// zwByteConns open big echoes until one is refused. -max-out-total
	// is met by the zwTotalAnswers-th big answer, the second of a
	// connection's, so that no request meets two limits at once.
	zwByteConns    = 48
	zwTotalAnswers = 10*zwPerConn + 2
	zwMaxOutTotal  = zwTinyHeld + (zwTotalAnswers-1)*zwAnswer + 1
	// zwFreeConns are the big-echo connections that fill their share
	// before -max-out-total is met: the polite client is served then.
	zwFreeConns = zwTotalAnswers / zwPerConn
)

// zwRefusal is why the contract refuses a request HEADERS (SPEC.md,
// "Hostile peers"), "" when it admits it: its connection holds live
// streams and held answer bytes, and the server total bytes.
func zwRefusal(live, held, total int) string {
	var by []string
	if live >= zwMaxStreams {
		by = append(by, serverapi.FlagGRPCMaxStreams)
	}
	if held >= zwMaxOutConn {
		by = append(by, serverapi.FlagMaxOutBytes)
	}
	if total >= zwMaxOutTotal {
		by = append(by, serverapi.FlagMaxOutTotal)
	}
	return strings.Join(by, "+")
}

// zwConn is one zero-window attacker and what the contract expects of
// it.
type zwConn struct {
	c         *rawgrpc.Conn
	payload   []byte
	answer    int // bytes each admitted answer holds
	live      int // streams admitted and never ended
	held      int // answer bytes held
	refusedBy string
}

func hostileGRPCZeroWindow(t *scenario.T) {
	s := t.StartServerLimits(scenario.ServerOpts{GRPC: true, MaxOutBytes: zwMaxOutConn},
		scenario.Limits{GRPCMaxStreams: zwMaxStreams, MaxOutTotal: zwMaxOutTotal})
	polite := politeConn(t, s)
	w := t.WatchGRPC(s)

	// One request at a time across every connection, each sent once the
	// one before was answered HEADERS or refused: the server's counts,
	// and so every verdict, are then the model's (zwRefusal).
	total := 0
	refused := map[string]int{}
	var admitted []string
	open := func(z *zwConn) {
		for z.refusedBy == "" {
			want := zwRefusal(z.live, z.held, total)
			if strings.Contains(want, "+") {
				t.Fatalf("the scenario's numbers put a request past two limits (%s)", want)
			}
			if got := zwOpen(t, z); got != (want != "") {
				t.Fatalf("connection %s, stream %d: refused=%v, want %v (%s; live %d, held %d, total %d)",
					z.c.LocalAddr(), z.live+1, got, want != "", want, z.live, z.held, total)
			}
			if want != "" {
				z.refusedBy = want
				refused[want]++
				break
			}
			z.live++
			z.held += z.answer
			total += z.answer
		}
		admitted = append(admitted, fmt.Sprint(z.live))
	}
	var conns []*zwConn
	attacker := func(payload, answer int) *zwConn {
		z := &zwConn{c: dialGRPC(t, s, rawgrpc.Options{ZeroWindow: true}), payload: make([]byte, payload), answer: answer}
		conns = append(conns, z)
		return z
	}
	for range zwStreamConns {
		open(attacker(zwTiny, zwTinyAnswer))
	}
	for range zwFreeConns {
		open(attacker(zwEcho, zwAnswer))
	}
	var during, after politeGRPC
	during.gets(t, polite, scenario.PoliteDuring)
	for range zwByteConns - zwFreeConns {
		open(attacker(zwEcho, zwAnswer))
	}
	// Past -max-out-total the polite client's get is refused too: the
	// limit is the server's, across connections.
	pr, perr := getOnce(t, polite)
	politeRefused := perr == nil && pr.WasReset && pr.Reset == http2.ErrCodeRefusedStream
	refused[serverapi.FlagMaxOutTotal]++
	ctrDuring := w.SampleDuring()

	for _, z := range conns {
		z.c.Close()
	}
	ctr := w.Settle()
	after.gets(t, polite, scenario.PoliteAfter)
	limits, limitEvents := limitCounts(t.Events(s))

	t.Field("grpcMaxStreams", zwMaxStreams)
	t.Field("maxOutBytes", zwMaxOutConn)
	t.Field("maxOutTotal", zwMaxOutTotal)
	t.Field("conns", fmt.Sprintf("%d small-echo + %d big-echo", zwStreamConns, zwByteConns))
	t.Field("answerBytes", fmt.Sprintf("%d small, %d big", zwTinyAnswer, zwAnswer))
	t.Field("admittedPerConn", strings.Join(admitted, ","))
	t.Field("heldTotal", total)
	wantRefused := refused[serverapi.FlagGRPCMaxStreams] + refused[serverapi.FlagMaxOutBytes] + refused[serverapi.FlagMaxOutTotal]
	scenario.Expectf(t, "streamsRefused", ctrDuring.StreamsRefused, int64(wantRefused), "refused by %v", refused)
	scenario.Expectf(t, "streamsRefusedAfter", ctr.StreamsRefused, int64(wantRefused), "counted once the attackers closed")
	scenario.Expectf(t, "politeRefusedPastTotal", politeRefused, true, "the polite get past -max-out-total ended %s (%v), want RST_STREAM(REFUSED_STREAM)", pr.Outcome(), perr)
	for _, l := range []string{serverapi.FlagMaxOutBytes, serverapi.FlagMaxOutTotal} {
		t.Volatile("limitEvents."+l, limitEvents[l])
		scenario.Expectf(t, "limitLogged."+l, limitEvents[l] > 0 && limits[l] <= int64(refused[l]), true,
			"%d LIMIT events counting %d refusals, want at least one, counting at most the %d refused", limitEvents[l], limits[l], refused[l])
	}
	t.Field("politeDuring", &during)
	t.Field("politeAfter", &after)
	w.Report(scenario.RSSLimitTightKB)
	during.check(t, "while the attackers held their shares")
	after.check(t, "after the attack")
}

// zwOpen opens one echo stream on z and reports whether the server
// refused it (RST_STREAM(REFUSED_STREAM)); answered HEADERS it is
// admitted; anything else fails the scenario.
func zwOpen(t *scenario.T, z *zwConn) (refused bool) {
	st, err := z.c.Open(rawgrpc.Request{Method: "Echo", Message: rawgrpc.EchoRequest(z.payload)})
	if err != nil {
		t.Fatalf("connection %s: %v", z.c.LocalAddr(), err)
	}
	ctx, cancel := context.WithTimeout(t.Ctx, scenario.IOTimeout)
	defer cancel()
	select {
	case <-st.Headers():
		select {
		case <-st.Done():
			r, _ := st.Wait(ctx)
			t.Fatalf("connection %s: stream %d answered %s, want an answer whose DATA waits for the window", z.c.LocalAddr(), st.ID(), r.Outcome())
		default:
		}
		return false
	case <-st.Done():
		r, _ := st.Wait(ctx)
		if r.WasReset && r.Reset == http2.ErrCodeRefusedStream {
			return true
		}
		t.Fatalf("connection %s: stream %d ended %s, want HEADERS or RST_STREAM(REFUSED_STREAM)", z.c.LocalAddr(), st.ID(), r.Outcome())
	case <-ctx.Done():
		t.Fatalf("connection %s: stream %d got neither HEADERS nor RST_STREAM within %v", z.c.LocalAddr(), st.ID(), scenario.IOTimeout)
	}
	return false
}
