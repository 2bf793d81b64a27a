package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/net/http2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rpcbench/rpcbench/internal/fakestack"
	"github.com/rpcbench/rpcbench/internal/rawgrpc"
	"github.com/rpcbench/rpcbench/internal/testexit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testexit.Exit)) }

// upstream serves a fake Bank with no bug on h2c in process; its
// balances are the record of what it executed.
func upstream(t *testing.T) string {
	t.Helper()
	addr, stop, err := fakestack.ServeBank(fakestack.SrvGood)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr
}

// start runs a proxy to up with rules, closed when the test ends.
func start(t *testing.T, up string, rules ...string) *Proxy {
	t.Helper()
	var rs []*Rule
	for _, r := range rules {
		rule, err := ParseRule(r)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, rule)
	}
	p, err := Listen("127.0.0.1:0", Config{Upstream: up, Rules: rs})
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve()
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, addr string) *rawgrpc.Conn {
	t.Helper()
	c, err := rawgrpc.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// call makes one Bank call on c and waits for its end.
func call(t *testing.T, c *rawgrpc.Conn, method string, msg []byte, timeout string) rawgrpc.Result {
	t.Helper()
	st, err := c.Open(rawgrpc.Request{Method: method, Timeout: timeout, Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := st.Wait(ctx)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return r
}

// balance reads account's balance from the upstream directly.
func balance(t *testing.T, up, account string) int64 {
	t.Helper()
	r := call(t, dial(t, up), "Get", rawgrpc.GetRequest(account, 0, 0), "10S")
	if r.Outcome() != "OK" || len(r.Messages) != 1 {
		t.Fatalf("get %s: %s", account, r.Outcome())
	}
	b := r.Messages[0]
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		b = b[n:]
		if typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if num == 2 {
				return int64(v)
			}
			b = b[m:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		b = b[n:]
	}
	return 0
}

// Calls pass through as they are, each recorded with what the upstream
// answered and what the client was sent.
func TestPassThrough(t *testing.T) {
	up := upstream(t)
	p := start(t, up)
	c := dial(t, p.Addr())
	r := call(t, c, "Debit", rawgrpc.DebitRequest("acct-P", 10, 0, 0), "10S")
	if r.Outcome() != "OK" || len(r.Messages) != 1 {
		t.Fatalf("debit through the proxy: %s, %d messages", r.Outcome(), len(r.Messages))
	}
	if got := balance(t, up, "acct-P"); got != 990 {
		t.Errorf("balance %d, want 990", got)
	}
	as := p.Attempts()
	if len(as) != 1 {
		t.Fatalf("%d attempts recorded, want 1", len(as))
	}
	a := as[0]
	if a.Method != "rpcbench.bank.v1.Bank/Debit" || !a.Forwarded || a.Upstream != "OK" || a.Client != "OK" || a.Timeout != "10S" || a.Rule != "" {
		t.Errorf("attempt %+v", a)
	}
	if a.Answered.Before(a.Start) || a.Ended.Before(a.Answered) {
		t.Errorf("times out of order: %+v", a)
	}
}

// A message larger than every window goes through both ways: the
// proxy relays DATA within the peers' windows and grants them more as
// it passes it on. The client is Go's HTTP/2 transport, which keeps to
// the proxy's windows (rawgrpc does not: the proxy closes its
// connection for sending past them, as a flow-control error).
func TestLargeMessages(t *testing.T) {
	up := upstream(t)
	p := start(t, up)
	tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	account := strings.Repeat("x", 3<<20) // echoed back in the answer
	msg := rawgrpc.DebitRequest(account, 1, 0, 0)
	body := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(body[1:], uint32(len(msg)))
	req, err := http.NewRequest("POST", "http://"+p.Addr()+"/rpcbench.bank.v1.Bank/Debit", bytes.NewReader(append(body, msg...)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if st := resp.Trailer.Get("Grpc-Status"); st != "0" || !bytes.Contains(got, []byte(account)) {
		t.Fatalf("a 3 MiB debit: grpc-status %q, %d bytes back", st, len(got))
	}
	if a := p.Attempts()[0]; a.Upstream != "OK" || a.Client != "OK" {
		t.Errorf("recorded %+v", a)
	}
}

// Each fault does what it says, and the upstream's record (its
// balances) shows whether the call ran: before forwarding, never; after,
// once, whatever the client was told.
func TestFaults(t *testing.T) {
	for _, c := range []struct {
		rule, client, upstream string
		forwarded              bool
	}{
		{"kind=unavailable method=Debit", "UNAVAILABLE", "", false},
		{"kind=refuse method=Debit", "RST_REFUSED_STREAM", "", false},
		{"kind=drop method=rpcbench.bank.v1.Bank/Debit", "RST_CANCEL", "OK", true},
		{"kind=drop method=*/Debit code=INTERNAL_ERROR", "RST_INTERNAL_ERROR", "OK", true},
		{"kind=close method=Debit", "CONN_CLOSED", "OK", true},
		{"kind=unavailable_after method=Debit", "UNAVAILABLE", "OK", true},
		{"kind=delay method=Debit delay=200ms", "OK", "OK", true},
		{"kind=late method=Debit delay=200ms", "OK", "OK", true},
		{"kind=goaway_cover method=Debit", "CONN_CLOSED", "OK", true},
		{"kind=reset method=Debit", "CONN_CLOSED", "OK", true},
		{"kind=cut_data method=Debit", "CONN_CLOSED", "OK", true},
	} {
		t.Run(c.rule, func(t *testing.T) {
			t.Parallel()
			up := upstream(t)
			p := start(t, up, c.rule)
			began := time.Now()
			r := call(t, dial(t, p.Addr()), "Debit", rawgrpc.DebitRequest("acct-F", 10, 0, 0), "10S")
			if r.Outcome() != c.client {
				t.Errorf("the client got %s, want %s", r.Outcome(), c.client)
			}
			switch {
			case strings.Contains(c.rule, "cut_data") && (r.HTTPStatus != 200 || len(r.Messages) != 0):
				t.Errorf("cut_data: the client got :status %d and %d messages, want the HEADERS and no whole message", r.HTTPStatus, len(r.Messages))
			case c.client == "CONN_CLOSED" && !strings.Contains(c.rule, "cut_data") && r.HTTPStatus != 0:
				t.Errorf("the client got HEADERS (:status %d) before the connection closed", r.HTTPStatus)
			}
			if strings.Contains(c.rule, "delay=") && time.Since(began) < 200*time.Millisecond {
				t.Errorf("answered after %v, before the 200ms delay", time.Since(began))
			}
			want := int64(1000)
			if c.forwarded {
				want = 990
			}
			if got := balance(t, up, "acct-F"); got != want {
				t.Errorf("the upstream's balance is %d, want %d", got, want)
			}
			var a Attempt
			for _, x := range p.Attempts() {
				if strings.HasSuffix(x.Method, "/Debit") {
					a = x
				}
			}
			if a.Ended.IsZero() || a.Ended.Before(a.Start) {
				t.Errorf("recorded %+v: no end, or one before its start", a)
			}
			sent := map[string]string{"kind=goaway_cover method=Debit": "GOAWAY_COVER", "kind=reset method=Debit": "CONN_RESET", "kind=cut_data method=Debit": "CUT_DATA"}[c.rule]
			if sent == "" {
				sent = c.client
			}
			if a.Forwarded != c.forwarded || a.Upstream != c.upstream || a.Client != sent || a.Rule == "" {
				t.Errorf("recorded %+v, want forwarded=%v upstream=%q client=%q and the rule", a, c.forwarded, c.upstream, sent)
			}
		})
	}
}

// A call whose answer the proxy holds is answered never: the client's
// deadline ends it, and its reset reaches the upstream.
func TestNoReply(t *testing.T) {
	up := upstream(t)
	p := start(t, up, "kind=noreply method=Debit count=1")
	c := dial(t, p.Addr())
	st, err := c.Open(rawgrpc.Request{Method: "Debit", Timeout: "10S", Message: rawgrpc.DebitRequest("acct-N", 10, 0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-st.Done():
		r, _ := st.Wait(context.Background())
		t.Fatalf("a held answer came: %s", r.Outcome())
	case <-time.After(300 * time.Millisecond):
	}
	st.Reset(http2.ErrCodeCancel)
	if got := balance(t, up, "acct-N"); got != 990 {
		t.Errorf("the upstream's balance is %d, want 990: it executed the call whose answer was held", got)
	}
	// count=1: the next debit goes through.
	if r := call(t, c, "Debit", rawgrpc.DebitRequest("acct-N", 10, 0, 0), "10S"); r.Outcome() != "OK" {
		t.Errorf("the second debit: %s, want OK", r.Outcome())
	}
	a := p.Attempts()[0]
	if a.Client != "" || a.ClientReset != "CANCEL" || a.Upstream != "OK" {
		t.Errorf("recorded %+v, want nothing sent to the client, its CANCEL, and the upstream's OK", a)
	}
}

// A client that sends garbage loses its connection alone: the proxy
// counts it, and a call on another connection is served.
func TestHostileClient(t *testing.T) {
	up := upstream(t)
	p := start(t, up)
	for _, garbage := range [][]byte{
		[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		append([]byte(http2.ClientPreface), 0, 0, 5, 4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5),    // SETTINGS of 5 bytes, no multiple of 6
		append([]byte(http2.ClientPreface), 0, 0, 0, 1, 5, 0, 0, 0, 2),                   // HEADERS on an even stream
		append([]byte(http2.ClientPreface), 0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0), // SETTINGS_MAX_FRAME_SIZE 0
	} {
		nc, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		nc.Write(garbage)
		nc.SetReadDeadline(time.Now().Add(15 * time.Second))
		buf := make([]byte, 4096)
		for {
			if _, err := nc.Read(buf); err != nil {
				break // closed by the proxy
			}
		}
		nc.Close()
	}
	if r := call(t, dial(t, p.Addr()), "Debit", rawgrpc.DebitRequest("acct-H", 10, 0, 0), "10S"); r.Outcome() != "OK" {
		t.Errorf("a polite debit after the garbage: %s", r.Outcome())
	}
	if n := p.Errors()["client"]; n != 4 {
		t.Errorf("%d client connections closed for garbage, want 4", n)
	}
}

func TestParseRule(t *testing.T) {
	for _, c := range []struct{ in, err string }{
		{"kind=drop method=Debit code=INTERNAL_ERROR", ""},
		{"kind=unavailable retry_after=300ms", ""},
		{"kind=bogus", `unknown kind "bogus"`},
		{"kind=drop code=NOPE", `code "NOPE"`},
		{"kind=refuse code=CANCEL", "code is only for kind=drop"},
		{"kind=delay", "kind=delay needs delay=DURATION"},
		{"kind=drop method=[", "is no pattern"},
		{"kind=late method=Place delay=2s", ""},
		{"kind=late", "kind=late needs delay=DURATION"},
		{"kind=drop method=Place count=2 skip=3 every=2", ""},
		{"kind=drop p=0.25 seed=7", ""},
		{"kind=drop every=0", "every \"0\": want a whole number from 1"},
		{"kind=drop p=1.5", "want a probability"},
		{"kind=drop p=0.5 every=2", "every and p both choose calls"},
		{"kind=drop seed=3", "seed is for p"},
	} {
		r, err := ParseRule(c.in)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("ParseRule(%q): %v", c.in, err)
		case c.err == "" && r.String() != c.in:
			t.Errorf("ParseRule(%q).String() = %q", c.in, r.String())
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseRule(%q) = %v, want an error saying %q", c.in, err, c.err)
		}
	}
}

// skip=, every= and count= choose the calls a rule takes by their
// order; p= chooses the same calls again for the same seed.
func TestRuleChoice(t *testing.T) {
	taken := func(rule string, n int) []int {
		r, err := ParseRule(rule)
		if err != nil {
			t.Fatal(err)
		}
		rs := rules{list: []*Rule{r}}
		var out []int
		for i := 1; i <= n; i++ {
			if rs.take("s.v1.S/Place") != nil {
				out = append(out, i)
			}
			rs.take("s.v1.S/Other") // does not match: not counted
		}
		return out
	}
	if got := fmt.Sprint(taken("kind=drop method=Place skip=2 every=3 count=2", 20)); got != "[5 8]" {
		t.Errorf("skip=2 every=3 count=2 took calls %s, want [5 8]", got)
	}
	a, b := taken("kind=drop method=Place p=0.3 seed=9", 200), taken("kind=drop method=Place p=0.3 seed=9", 200)
	if fmt.Sprint(a) != fmt.Sprint(b) || len(a) < 30 || len(a) > 90 {
		t.Errorf("p=0.3 took %d of 200 calls, %v then %v: want about 60, the same both times", len(a), a, b)
	}
}

// An upstream that answers garbage loses that pair of connections
// alone: its client sees its connection end, the proxy counts it, and
// goes on serving the next client.
func TestHostileUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// It reads the proxy's preface, answers garbage and waits for
			// the proxy to close the connection.
			go func() {
				defer c.Close()
				io.ReadFull(c, make([]byte, len(http2.ClientPreface)))
				c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
				io.Copy(io.Discard, c)
			}()
		}
	}()
	defer func() { ln.Close(); <-done }()
	p := start(t, ln.Addr().String())
	for range 2 {
		// The proxy may close the client's connection before the
		// client is done saying hello: no call then.
		c, err := rawgrpc.Dial(context.Background(), p.Addr())
		if err != nil {
			continue
		}
		st, err := c.Open(rawgrpc.Request{Method: "Debit", Timeout: "10S", Message: rawgrpc.DebitRequest("acct-U", 10, 0, 0)})
		if err == nil {
			if r, _ := st.Wait(context.Background()); r.Outcome() == "OK" {
				t.Errorf("a debit through a garbage upstream answered OK")
			}
		}
		c.Close()
	}
	if n := p.Errors()["upstream"]; n != 2 {
		t.Errorf("%d upstream connections closed for garbage, want 2", n)
	}
	for _, a := range p.Attempts() {
		if a.Upstream == "OK" || a.Client == "OK" {
			t.Errorf("recorded %+v", a)
		}
	}
}

// goaway_below answers a call with GOAWAY below its stream: the client
// learns it was not processed, the upstream never saw it, and the next
// connection is served (count=1).
func TestGoAwayBelow(t *testing.T) {
	up := upstream(t)
	p := start(t, up, "kind=goaway_below method=Debit count=1")
	c := dial(t, p.Addr())
	st, err := c.Open(rawgrpc.Request{Method: "Debit", Timeout: "10S", Message: rawgrpc.DebitRequest("acct-G", 10, 0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Wait(context.Background())
	if err != nil || r.Outcome() == "OK" {
		t.Fatalf("the debit: %s %v, want no answer", r.Outcome(), err)
	}
	<-c.Closed()
	if ga := c.GoAway(); ga == nil || ga.LastStreamID != 0 || ga.Code != http2.ErrCodeNo {
		t.Errorf("GOAWAY %+v, want last stream 0, NO_ERROR", ga)
	}
	if got := balance(t, up, "acct-G"); got != 1000 {
		t.Errorf("the upstream's balance is %d, want 1000: it never saw the call", got)
	}
	if r := call(t, dial(t, p.Addr()), "Debit", rawgrpc.DebitRequest("acct-G", 10, 0, 0), "10S"); r.Outcome() != "OK" {
		t.Errorf("the debit on a new connection: %s, want OK", r.Outcome())
	}
	if a := p.Attempts()[0]; a.Forwarded || a.Client != "GOAWAY" || a.Rule == "" {
		t.Errorf("recorded %+v", a)
	}
}

// The record holds maxAttempts attempts; later ones are forwarded all
// the same, and counted as unrecorded.
func TestRecordBounded(t *testing.T) {
	defer func(n int) { maxAttempts = n }(maxAttempts)
	maxAttempts = 2
	up := upstream(t)
	p := start(t, up)
	c := dial(t, p.Addr())
	for range 3 {
		if r := call(t, c, "Debit", rawgrpc.DebitRequest("acct-R", 10, 0, 0), "10S"); r.Outcome() != "OK" {
			t.Fatalf("debit: %s", r.Outcome())
		}
	}
	if n, u := len(p.Attempts()), p.Unrecorded(); n != 2 || u != 1 {
		t.Errorf("%d attempts recorded, %d unrecorded; want 2 and 1", n, u)
	}
	if got := balance(t, up, "acct-R"); got != 970 {
		t.Errorf("balance %d, want 970: the third debit forwarded", got)
	}
}
