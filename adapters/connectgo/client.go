package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb"
	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb/bankpbconnect"
	"github.com/rpcbench/rpcbench/adapters/gokit/clientkit"
)

// connectModule is the module whose version init_ok reports.
const connectModule = "connectrpc.com/connect"

// clientStack is connect-go's client for clientkit, over net/http's
// HTTP/2 transport. connect-go has no service config, so no retry
// policy, hedging, throttling or pushback, and no wait-for-ready: a call
// is one HTTP request. net/http's HTTP/2 transport re-sends a request on
// a fresh stream, by itself, after REFUSED_STREAM or a GOAWAY below the
// stream (http2shouldRetryRequest; connect-go sets Request.GetBody for
// unary calls, which allows it), and its ping health check
// (SendPingTimeout, PingTimeout) closes a connection whose peer went
// silent. net/http cannot close a connection with requests in flight,
// so shutdown cancels the calls it has waited for.
var clientStack = clientkit.Stack{Name: "connect-go", Version: linkedVersion(),
	Capabilities:     clientkit.Capabilities{TransparentRetry: true, Keepalive: true},
	NoWaitForReady:   "connect-go has no wait-for-ready: a call is one HTTP request",
	Dial:             dialChannel,
	CancelOnShutdown: true}

// linkedVersion is connect-go's version as linked, from the binary's
// module build info, without the "v"; "unknown" if the binary has none.
func linkedVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == connectModule {
				if d.Replace != nil {
					d = d.Replace
				}
				return strings.TrimPrefix(d.Version, "v")
			}
		}
	}
	return "unknown"
}

// conn is one connect-go client on an HTTP/2 transport of its own.
type conn struct {
	log       *log.Logger
	transport *http.Transport
	client    bankpbconnect.BankClient
}

// Close closes the channel's connections. Calls in flight have ended or
// been cancelled by then (clientkit.Stack.CancelOnShutdown).
func (c *conn) Close() { c.transport.CloseIdleConnections() }

// newTransport is net/http's own transport speaking HTTP/2 cleartext
// with prior knowledge and nothing else, with its ping health check
// when ka asks for one. Everything else is net/http's zero-value
// default: no proxy, no idle timeout, no extra retries.
func newTransport(ka *clientkit.Keepalive) *http.Transport {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	t := &http.Transport{Protocols: &p}
	if ka != nil {
		t.HTTP2 = &http.HTTP2Config{SendPingTimeout: time.Duration(ka.TimeMS) * time.Millisecond,
			PingTimeout: time.Duration(ka.TimeoutMS) * time.Millisecond}
	}
	return t
}

// channelRefusal is why w cannot be a connect-go channel; nil when it
// can.
func channelRefusal(w clientkit.Channel) *clientkit.CallError {
	if w.CompactConfig() != nil {
		// Not parsed, not partly honoured: connect-go takes no service
		// config at all, so even one that only sets a timeout would be
		// ignored.
		return &clientkit.CallError{Kind: clientkit.KindUnsupported,
			Text: "connect-go has no service config (retry_policy, hedging and throttling are false)"}
	}
	if k := w.Keepalive; k != nil {
		if !k.PermitWithoutStream {
			// net/http pings a connection silent for SendPingTimeout
			// whether or not a request is in flight.
			return &clientkit.CallError{Kind: clientkit.KindUnsupported,
				Text: "net/http's HTTP/2 ping health check cannot be limited to connections with calls in flight (permit_without_stream false)"}
		}
		if k.TimeMS < 1 || k.TimeoutMS < 1 {
			// Zero means something else to net/http: no health check, or
			// a 15 s ping timeout.
			return &clientkit.CallError{Kind: clientkit.KindConfig,
				Text: fmt.Sprintf("keepalive time_ms %d and timeout_ms %d must be at least 1", k.TimeMS, k.TimeoutMS)}
		}
	}
	u, err := url.Parse("http://" + w.Target)
	if err != nil || u.Host != w.Target {
		return &clientkit.CallError{Kind: clientkit.KindConfig, Text: fmt.Sprintf("target %q is not host:port", w.Target)}
	}
	return nil
}

// dialChannel builds a connect-go client of w's target in its gRPC
// protocol, on a transport of its own.
func dialChannel(w clientkit.Channel, log *log.Logger) (clientkit.Conn, error) {
	if ce := channelRefusal(w); ce != nil {
		return nil, ce
	}
	t := newTransport(w.Keepalive)
	c := &conn{log: log, transport: t,
		client: bankpbconnect.NewBankClient(&http.Client{Transport: t}, "http://"+w.Target, connect.WithGRPC())}
	log.Printf("channel %s: %s, keepalive %+v", w.ID, w.Target, w.Keepalive)
	return c, nil
}

// Invoke makes call once through the generated client and reports what
// connect-go returned.
func (c *conn) Invoke(ctx context.Context, call clientkit.Call, req proto.Message) clientkit.Outcome {
	ctx, info := connect.NewClientContext(ctx)
	md := requestHeader(call.Metadata)
	var resp proto.Message
	var err error
	start := time.Now()
	switch req := req.(type) {
	case *bankpb.GetRequest:
		resp, err = msg(c.client.Get(ctx, request(req, md)))
	case *bankpb.DebitRequest:
		resp, err = msg(c.client.Debit(ctx, request(req, md)))
	case *bankpb.EchoRequest:
		resp, err = msg(c.client.Echo(ctx, request(req, md)))
	}
	elapsed := time.Since(start)
	code, message := status(err)
	if code > maxCode {
		c.log.Printf("call %d: connect-go surfaced code %d, outside the protocol's 0 to 16: reported as UNKNOWN", call.ID, code)
		code = connect.CodeUnknown
	}
	return clientkit.Outcome{Response: resp, Code: uint32(code), Message: message,
		Headers: c.mdMap(call.ID, info.ResponseHeader()), Trailers: c.mdMap(call.ID, info.ResponseTrailer()), Elapsed: elapsed}
}

// request is req with md as its header.
func request[T any](req *T, md http.Header) *connect.Request[T] {
	r := connect.NewRequest(req)
	for k, vs := range md {
		r.Header()[k] = vs
	}
	return r
}

// msg is resp's message, nil on error.
func msg[T any, M interface {
	*T
	proto.Message
}](resp *connect.Response[T], err error) (proto.Message, error) {
	if err != nil {
		return nil, err
	}
	return M(resp.Msg), nil
}

// requestHeader is the call's metadata as connect-go's request headers.
// A -bin value is the binary value itself, encoded for the wire as
// grpc-go's metadata does it.
func requestHeader(md map[string]string) http.Header {
	h := make(http.Header, len(md))
	for k, v := range md {
		if strings.HasSuffix(k, "-bin") {
			v = connect.EncodeBinaryHeader([]byte(v))
		}
		h.Add(k, v)
	}
	return h
}

// maxCode is the largest code the protocol carries, UNAUTHENTICATED.
const maxCode = connect.CodeUnauthenticated

// status is err's code and message as connect-go surfaced them: 0 and ""
// for nil. connect-go returns a *connect.Error for every failure of a
// call; anything else would be UNKNOWN by connect.CodeOf's own rule.
func status(err error) (connect.Code, string) {
	if err == nil {
		return 0, ""
	}
	if ce := new(connect.Error); errors.As(err, &ce) {
		return ce.Code(), ce.Message()
	}
	return connect.CodeOf(err), err.Error()
}

// mdMap is h as the protocol carries metadata: never nil, names in
// lower case as HTTP/2 sends them (net/http canonicalizes them), -bin
// values base64, standard and padded. A -bin value that is not base64
// is passed as received, and logged.
func (c *conn) mdMap(id int64, h http.Header) map[string][]string {
	m := make(map[string][]string, len(h))
	for k, vs := range h {
		k = strings.ToLower(k)
		if strings.HasSuffix(k, "-bin") {
			enc := make([]string, len(vs))
			for i, v := range vs {
				b, err := connect.DecodeBinaryHeader(v)
				if err != nil {
					c.log.Printf("call %d: %s value %q: %v", id, k, v, err)
					enc[i] = v
					continue
				}
				enc[i] = base64.StdEncoding.EncodeToString(b)
			}
			vs = enc
		}
		m[k] = append(m[k], vs...)
	}
	return m
}
