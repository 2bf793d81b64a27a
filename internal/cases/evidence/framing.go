package evidence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

const (
	loadGoroutines = 8
	loadCalls      = 400
)

// loadResult is what a concurrent workload observed.
type loadResult struct {
	ok, mismatch, nonOK, debits atomic.Int64
	elapsed                     time.Duration
	// attempts counts every attempt of every call.
	attempts atomic.Int64
}

// runLoad makes loadCalls calls from loadGoroutines goroutines over c.
// Goroutine g uses its own account acct-g<g>; when withDebits is set every
// second call is a debit of 1. A response naming another account is a
// mismatch.
func runLoad(t *scenario.T, c *client.Client, withDebits bool) *loadResult {
	var res loadResult
	var wg sync.WaitGroup
	start := time.Now()
	for g := range loadGoroutines {
		wg.Go(func() {
			account := fmt.Sprintf("acct-g%d", g)
			for i := range loadCalls / loadGoroutines {
				call := scenario.GetCall(account)
				if withDebits && i%2 == 1 {
					call = scenario.DebitCall(account, 1, "")
					res.debits.Add(1)
				}
				r := c.Do(t.Ctx, call)
				res.attempts.Add(int64(len(r.Log)))
				switch {
				case r.Status != proto.StatusOK:
					res.nonOK.Add(1)
				case scenario.PayloadFields(r)["account"] != account:
					res.mismatch.Add(1)
				default:
					res.ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return &res
}

func normalMultiplex(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{})
	c := t.Client(s.Addr, client.DefaultConfig())
	res := runLoad(t, c, true)
	ctr := t.Counters(s)
	t.Field("calls", loadCalls)
	t.Field("goroutines", loadGoroutines)
	scenario.Expect(t, "ok", res.ok.Load(), loadCalls)
	scenario.Expect(t, "mismatch", res.mismatch.Load(), 0)
	t.Field("nonOk", res.nonOK.Load())
	t.Field("clientConns", c.Stats().ConnsOpened)
	scenario.Expectf(t, "serverConns", ctr.ConnsScenario, 1, "the calls did not share one connection")
	t.Field("debitsSent", res.debits.Load())
	scenario.Expectf(t, "serverDebitExec", ctr.ExecDebit, res.debits.Load(), "one execution per debit sent")
	t.Volatile("elapsed", scenario.Millis(res.elapsed))
	want := int64(bank.DefaultBalance - loadCalls/loadGoroutines/2)
	for g := range loadGoroutines {
		account := fmt.Sprintf("acct-g%d", g)
		if b := t.Balance(s, account); !t.Check(b == want, "%s balance=%d, want %d", account, b, want) {
			break
		}
	}
}

// decoderSplitModel checks the decoder in-process against a model: the
// same frames, whatever the read boundaries.
func decoderSplitModel(t *scenario.T) {
	const n = 500
	rng := rand.New(rand.NewPCG(13, 500))
	frames := make([]proto.Frame, n)
	var stream []byte
	for i := range frames {
		f := randomFrame(rng, uint64(i+1))
		var err error
		if stream, err = proto.AppendFrame(stream, &f); err != nil {
			t.Fatalf("encode frame %d: %v", i, err)
		}
		frames[i] = f
	}
	one := func(int) int { return 1 }
	random := func(int) int { return 1 + rng.IntN(97) }
	diff1, err1 := decodeInPieces(stream, one, frames)
	diffR, errR := decodeInPieces(stream, random, frames)

	maxFrame := proto.Frame{Type: proto.TypeRequest, ID: 1, Method: "m"}
	maxFrame.Payload = make([]byte, proto.MaxFrameLen-maxFrame.EncodedLen()+4)
	enc, encErr := proto.AppendFrame(nil, &maxFrame)
	var dec proto.Decoder
	got, maxErr := dec.Feed(enc)
	maxAccepted := encErr == nil && maxErr == nil && len(got) == 1 && len(enc) == proto.MaxFrameLen+4

	var early proto.Decoder
	_, earlyErr := early.Feed(binary.BigEndian.AppendUint32(nil, proto.MaxFrameLen+1))
	var pe *proto.ProtocolError
	plusOneRejected := errors.As(earlyErr, &pe)
	var short proto.Decoder
	_, shortErr := short.Feed(binary.BigEndian.AppendUint32(nil, proto.MinFrameLen-1))
	minusOneRejected := errors.As(shortErr, &pe)

	// Frames complete before a bad one come back with the error, and a
	// dead decoder interprets nothing more, not even a valid frame.
	good := frames[:2]
	badMagic := t.Encode(frames[2])
	badMagic[4], badMagic[5] = 0xde, 0xad
	beforeMagic, deadAfter := feedThenBad(t, good, badMagic, frames[3])
	beforeLength, _ := feedThenBad(t, good, binary.BigEndian.AppendUint32(nil, proto.MinFrameLen-1), frames[3])
	// A request must carry status 0; a valid status is no excuse.
	statusReq := proto.Frame{Type: proto.TypeRequest, ID: 9, BudgetMs: 100, Method: "m"}
	beforeStatus, _ := feedThenBad(t, good, t.WithStatus(statusReq, proto.StatusAppError), frames[3])

	t.Field("model", "in-process")
	t.Field("frames", n)
	t.Field("bytes", len(stream))
	scenario.Expectf(t, "diff1byte", diff1, 0, "frames decoded from 1-byte reads differ from those encoded")
	scenario.Expectf(t, "diffRandom", diffR, 0, "frames decoded from random-size reads differ from those encoded")
	scenario.Expectf(t, "maxFrameAccepted", maxAccepted, true, "a %d-byte frame was not accepted: %v %v", proto.MaxFrameLen, encErr, maxErr)
	scenario.Expectf(t, "maxPlus1Rejected", plusOneRejected, true, "a %d-byte length prefix alone was not rejected: %v", proto.MaxFrameLen+1, earlyErr)
	t.Field("early4byte", fmt.Sprint(earlyErr))
	scenario.Expectf(t, "minMinus1Rejected", minusOneRejected, true, "a %d-byte length prefix alone was not rejected: %v", proto.MinFrameLen-1, shortErr)
	scenario.Expectf(t, "framesBeforeBadMagic", beforeMagic, "2 frames, then bad magic 0xdead", "one Feed of 2 frames and a bad one")
	scenario.Expectf(t, "framesBeforeBadLength", beforeLength, fmt.Sprintf("2 frames, then frame length %d outside [%d,%d]", proto.MinFrameLen-1, proto.MinFrameLen, proto.MaxFrameLen),
		"one Feed of 2 frames and a bad length prefix")
	scenario.Expectf(t, "framesBeforeRequestWithStatus", beforeStatus, fmt.Sprintf("2 frames, then request with status %d", proto.StatusAppError),
		"one Feed of 2 frames and a request with status APP_ERROR")
	scenario.Expectf(t, "deadAfterError", deadAfter, "0 frames, same error", "a valid frame fed after the error")
	t.Check(err1 == nil && errR == nil, "decode errors: %v, %v", err1, errR)
}

// feedThenBad feeds a fresh decoder the frames good followed by the
// bytes bad in one Feed, then a valid frame. It says what the first Feed
// returned ("2 frames, then <reason>"; frames that differ from good are
// not counted) and what the second did ("0 frames, same error" when the
// decoder stayed dead).
func feedThenBad(t *scenario.T, good []proto.Frame, bad []byte, next proto.Frame) (first, second string) {
	var dec proto.Decoder
	got, err := dec.Feed(append(t.Encode(good...), bad...))
	same := 0
	for i := range min(len(got), len(good)) {
		if cmp.Equal(got[i], good[i]) {
			same++
		}
	}
	var pe *proto.ProtocolError
	if !errors.As(err, &pe) {
		return fmt.Sprintf("%d frames, then %v", same, err), ""
	}
	first = fmt.Sprintf("%d frames, then %s", same, pe.Reason)
	again, err2 := dec.Feed(t.Encode(next))
	second = fmt.Sprintf("%d frames", len(again))
	if errors.Is(err2, err) {
		second += ", same error"
	} else {
		second += fmt.Sprintf(", error %v", err2)
	}
	return first, second
}

// decodeInPieces feeds stream to a fresh decoder in pieces of size(i)
// bytes and counts decoded frames that differ from want (missing or extra
// frames count too).
func decodeInPieces(stream []byte, size func(int) int, want []proto.Frame) (int, error) {
	var dec proto.Decoder
	var got []proto.Frame
	for i := 0; len(stream) > 0; i++ {
		n := min(size(i), len(stream))
		fs, err := dec.Feed(stream[:n])
		if err != nil {
			return len(want), err
		}
		got = append(got, fs...)
		stream = stream[n:]
	}
	diff := max(len(want), len(got)) - min(len(want), len(got))
	for i := range min(len(want), len(got)) {
		if !cmp.Equal(want[i], got[i]) {
			diff++
		}
	}
	if dec.Buffered() != 0 {
		return diff, fmt.Errorf("%d bytes left over", dec.Buffered())
	}
	return diff, nil
}

func randomFrame(rng *rand.Rand, id uint64) proto.Frame {
	letters := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
	f := proto.Frame{Type: proto.TypeRequest, ID: id, BudgetMs: rng.Uint32(), Method: letters(1 + rng.IntN(proto.MaxMethodLen)), Key: letters(rng.IntN(proto.MaxKeyLen + 1))}
	if rng.IntN(2) == 0 {
		f.Type, f.BudgetMs, f.Status = proto.TypeResponse, 0, proto.Status(rng.IntN(5))
	}
	if n := rng.IntN(300); n > 0 {
		f.Payload = make([]byte, n)
		for i := range f.Payload {
			f.Payload[i] = byte(rng.Uint32())
		}
	}
	return f
}

func halfPacketStickyReal(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{Chunk: true})
	c := t.Client(s.Addr, client.DefaultConfig())
	res := runLoad(t, c, false)
	// The server counts a frame once its last piece is written, which can
	// be just after the client has read it.
	var ctr scenario.Counters
	scenario.WaitFor(5*time.Second, func() bool {
		ctr = t.Counters(s)
		return ctr.FramesSent >= loadCalls
	})
	st := c.Stats()
	scenario.Expect(t, "ok", res.ok.Load(), loadCalls)
	scenario.Expect(t, "mismatch", res.mismatch.Load(), 0)
	t.Field("nonOk", res.nonOK.Load())
	t.Volatile("serverChunks", ctr.WriteChunks)
	// frames_sent also counts answers on control connections (their
	// ctl.hello, earlier stats polls), as many as have been written when
	// the stats are taken: at least the calls' answers, an exact count no.
	scenario.AtLeast(t, "serverFrames", ctr.FramesSent, loadCalls, "the server did not write every answer")
	t.Volatile("clientReadsEndingMidFrame", st.ReadsMidFrame)
	t.Volatile("clientReadsWithMultipleFrames", st.ReadsMultiFrame)
	// Both counts are never negative, so their sum is 0 only if each is.
	scenario.Expectf(t, "protocolErrors", ctr.ProtocolErrors+st.ProtocolErrors, 0, "server %d, client %d", ctr.ProtocolErrors, st.ProtocolErrors)
	scenario.Expectf(t, "midFrameSeen", st.ReadsMidFrame > 0, true, "no client read ended mid-frame: the case proves nothing")
	scenario.Expectf(t, "multiFrameSeen", st.ReadsMultiFrame > 0, true, "no client read carried several frames: the case proves nothing")
	t.Check(ctr.WriteChunks > ctr.FramesSent, "server wrote %d chunks for %d frames: chunk mode did not split", ctr.WriteChunks, ctr.FramesSent)
}

func serverSplitAndInvalidRequest(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{})

	req := proto.Frame{Type: proto.TypeRequest, ID: 7, BudgetMs: 1000, Method: bank.MethodGet, Payload: []byte("account=acct-S")}
	enc, err := proto.AppendFrame(nil, &req)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	resp, writes, err := byteByByte(s.Addr, enc)
	splitOK := err == nil && resp.ID == 7 && resp.Status == proto.StatusOK && string(resp.Payload) != "" && scenario.FieldOf(resp.Payload, "account") == "acct-S"

	badMagic := append([]byte(nil), enc...)
	badMagic[4], badMagic[5] = 0xde, 0xad
	closedMagic, errMagic := closedAfter(s.Addr, badMagic)
	huge := binary.BigEndian.AppendUint32(nil, 1<<31-1)
	closedHuge, errHuge := closedAfter(s.Addr, huge)

	// Frames complete before a bad one are handled; nothing after it is.
	debit := func(id uint64, account string) proto.Frame {
		return proto.Frame{Type: proto.TypeRequest, ID: id, BudgetMs: 1000, Method: bank.MethodDebit, Payload: []byte("account=" + account + " amount=10")}
	}
	bad := t.Encode(debit(2, "acct-V"))
	bad[4], bad[5] = 0xde, 0xad
	validThenBad := t.Encode(debit(1, "acct-V"))
	validThenBad = append(validThenBad, bad...)
	validThenBad = append(validThenBad, t.Encode(debit(3, "acct-V"))...)
	answeredVB, closedVB, errVB := answersUntilClose(s.Addr, validThenBad)
	// A RESPONSE frame from a client is a bad frame too.
	respThenReq := t.Encode(proto.Frame{Type: proto.TypeResponse, ID: 1, Method: bank.MethodGet}, debit(2, "acct-P"))
	answeredRR, closedRR, errRR := answersUntilClose(s.Addr, respThenReq)
	// So is a REQUEST carrying a status, which must be 0 in a request.
	statusThenReq := append(t.WithStatus(debit(1, "acct-T"), proto.StatusUnavailable), t.Encode(debit(2, "acct-T"))...)
	answeredST, closedST, errST := answersUntilClose(s.Addr, statusThenReq)

	c := t.Client(s.Addr, client.DefaultConfig())
	after := c.Do(t.Ctx, scenario.GetCall("acct-S"))
	ctr := t.Counters(s)

	t.Field("splitRequest", fmt.Sprintf("%v@%dwrites", resp.Status, writes))
	scenario.Expectf(t, "splitOk", splitOK, true, "request written one byte at a time: %v %v %q", err, resp.Status, resp.Payload)
	scenario.Expectf(t, "badMagicClosed", closedMagic, true, "server did not close after bad magic: %v", errMagic)
	scenario.Expectf(t, "hugeLengthClosed", closedHuge, true, "server did not close after a 2^31-1 length: %v", errHuge)
	scenario.Expectf(t, "validThenBadAnswered", answeredVB, "1", "one write of debits 1, bad 2 and 3: %v", errVB)
	scenario.Expectf(t, "validThenBadClosed", closedVB, true, "server did not close after a bad frame: %v", errVB)
	scenario.Expect(t, "validThenBadBalance", t.Balance(s, "acct-V"), bank.DefaultBalance-10)
	scenario.Expectf(t, "responseThenRequestAnswered", answeredRR, "none", "one write of a RESPONSE frame and debit 2: %v", errRR)
	scenario.Expectf(t, "responseThenRequestClosed", closedRR, true, "server did not close after a RESPONSE frame: %v", errRR)
	scenario.Expect(t, "responseThenRequestBalance", t.Balance(s, "acct-P"), bank.DefaultBalance)
	scenario.Expectf(t, "requestWithStatusAnswered", answeredST, "none", "one write of debit 1 with status UNAVAILABLE and debit 2: %v", errST)
	scenario.Expectf(t, "requestWithStatusClosed", closedST, true, "server did not close after a request with a status: %v", errST)
	scenario.Expect(t, "requestWithStatusBalance", t.Balance(s, "acct-T"), bank.DefaultBalance)
	scenario.Expect(t, "protocolErrors", ctr.ProtocolErrors, 5)
	t.Field("afterwards", scenario.Brief(after, "account"))
	t.Check(after.Status == proto.StatusOK, "new connection afterwards: %v", after.Status)
}

// byteByByte writes enc to a new connection one byte per write and
// decodes the single response.
func byteByByte(addr string, enc []byte) (proto.Frame, int, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return proto.Frame{}, 0, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	writes := 0
	for i := range enc {
		if _, err := nc.Write(enc[i : i+1]); err != nil {
			return proto.Frame{}, writes, err
		}
		writes++
	}
	f, err := proto.NewFrameReader(nc, proto.TypeResponse, 4096).ReadFrame()
	return f, writes, err
}

// answersUntilClose writes b to a new connection in one write and reads
// answers until the server closes it. It returns the IDs answered, "1,3"
// or "none", and whether the server closed the connection (EOF or reset)
// rather than leaving it open.
func answersUntilClose(addr string, b []byte) (string, bool, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", false, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write(b); err != nil {
		return "", false, err
	}
	var ids []string
	fr := proto.NewFrameReader(nc, proto.TypeResponse, 0)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			answered := strings.Join(ids, ",")
			if answered == "" {
				answered = "none"
			}
			if errors.Is(err, io.EOF) || scenario.IsReset(err) {
				return answered, true, nil
			}
			return answered, false, err
		}
		ids = append(ids, strconv.FormatUint(f.ID, 10))
	}
}

// closedAfter writes b to a new connection and reports whether the server
// then closed it (EOF or reset) rather than leaving it open.
func closedAfter(addr string, b []byte) (bool, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return false, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write(b); err != nil {
		return false, err
	}
	_, err = io.Copy(io.Discard, nc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false, err
	}
	return true, err
}

func clientOversizeRejectedLocally(t *scenario.T) {
	s := t.StartServer(scenario.ServerOpts{})
	c := t.Client(s.Addr, client.DefaultConfig())
	call := scenario.DebitCall("acct-O", 1, "")
	call.Payload = append(call.Payload, make([]byte, proto.MaxFrameLen)...)
	r := c.Do(t.Ctx, call)
	ctr := t.Counters(s)
	requests := ctr.RequestsGet + ctr.RequestsDebit + ctr.RequestsOther
	t.Field("payloadBytes", len(call.Payload))
	scenario.Expect(t, "status", r.Status, proto.StatusInvalidArgument)
	scenario.Expect(t, "attempts", r.Attempts, 0)
	t.Field("err", fmt.Sprint(r.Err))
	t.Field("clientConns", c.Stats().ConnsOpened)
	scenario.Expect(t, "serverRequests", requests, 0)
	t.Check(errors.Is(r.Err, proto.ErrInvalidFrame), "err=%v, want ErrInvalidFrame", r.Err)
}
