package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/rpcbench/rpcbench/adapters/connectgo/bankpb"
	"github.com/rpcbench/rpcbench/adapters/connectgo/bankpb/bankpbconnect"
)

// channel is one connect-go client on an HTTP/2 transport of its own,
// and the configuration it was built with.
type channel struct {
	target    string
	keepalive *wireKeepalive
	transport *http.Transport
	client    bankpbconnect.BankClient
}

func (c *channel) same(w wireChannel) bool {
	ka, kb := c.keepalive, w.Keepalive
	return c.target == w.Target && compact(w.ServiceConfig) == nil &&
		(ka == nil) == (kb == nil) && (ka == nil || *ka == *kb)
}

// close closes the channel's connections. Calls in flight have ended or
// been cancelled by then (session.drain).
func (c *channel) close() { c.transport.CloseIdleConnections() }

// newTransport is net/http's own transport speaking HTTP/2 cleartext
// with prior knowledge and nothing else, with its ping health check
// when ka asks for one. Everything else is net/http's zero-value
// default: no proxy, no idle timeout, no extra retries.
func newTransport(ka *wireKeepalive) *http.Transport {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	t := &http.Transport{Protocols: &p}
	if ka != nil {
		t.HTTP2 = &http.HTTP2Config{SendPingTimeout: time.Duration(ka.TimeMS) * time.Millisecond,
			PingTimeout: time.Duration(ka.TimeoutMS) * time.Millisecond}
	}
	return t
}

// channelRefusal is why w cannot be a connect-go channel, as a
// call_error's kind and text; "" when it can.
func channelRefusal(w wireChannel) (kind, text string) {
	if compact(w.ServiceConfig) != nil {
		// Not parsed, not partly honoured: connect-go takes no service
		// config at all, so even one that only sets a timeout would be
		// ignored.
		return kindUnsupported, "connect-go has no service config (retry_policy, hedging and throttling are false)"
	}
	if k := w.Keepalive; k != nil {
		if !k.PermitWithoutStream {
			// net/http pings a connection silent for SendPingTimeout
			// whether or not a request is in flight.
			return kindUnsupported, "net/http's HTTP/2 ping health check cannot be limited to connections with calls in flight (permit_without_stream false)"
		}
		if k.TimeMS < 1 || k.TimeoutMS < 1 {
			// Zero means something else to net/http: no health check, or
			// a 15 s ping timeout.
			return kindConfig, fmt.Sprintf("keepalive time_ms %d and timeout_ms %d must be at least 1", k.TimeMS, k.TimeoutMS)
		}
	}
	u, err := url.Parse("http://" + w.Target)
	if err != nil || u.Host != w.Target {
		return kindConfig, fmt.Sprintf("target %q is not host:port", w.Target)
	}
	return "", ""
}

// method is one Bank method: its request message, and the generated
// client's call. invoke returns the response message, nil on error.
type method struct {
	request func() proto.Message
	invoke  func(ctx context.Context, c bankpbconnect.BankClient, req proto.Message, md http.Header) (proto.Message, error)
}

// methods are the Bank methods by the protocol's name for them.
var methods = map[string]method{
	"rpcbench.bank.v1.Bank/Get": {
		func() proto.Message { return &bankpb.GetRequest{} },
		func(ctx context.Context, c bankpbconnect.BankClient, req proto.Message, md http.Header) (proto.Message, error) {
			r := connect.NewRequest(req.(*bankpb.GetRequest))
			copyHeader(r.Header(), md)
			return msg(c.Get(ctx, r))
		}},
	"rpcbench.bank.v1.Bank/Debit": {
		func() proto.Message { return &bankpb.DebitRequest{} },
		func(ctx context.Context, c bankpbconnect.BankClient, req proto.Message, md http.Header) (proto.Message, error) {
			r := connect.NewRequest(req.(*bankpb.DebitRequest))
			copyHeader(r.Header(), md)
			return msg(c.Debit(ctx, r))
		}},
	"rpcbench.bank.v1.Bank/Echo": {
		func() proto.Message { return &bankpb.EchoRequest{} },
		func(ctx context.Context, c bankpbconnect.BankClient, req proto.Message, md http.Header) (proto.Message, error) {
			r := connect.NewRequest(req.(*bankpb.EchoRequest))
			copyHeader(r.Header(), md)
			return msg(c.Echo(ctx, r))
		}},
}

func msg[T any, M interface {
	*T
	proto.Message
}](resp *connect.Response[T], err error) (proto.Message, error) {
	if err != nil {
		return nil, err
	}
	return M(resp.Msg), nil
}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		dst[k] = vs
	}
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

// channelFor returns the channel w names, building it the first time.
// The error is a call_error's kind and text.
func (s *session) channelFor(w wireChannel) (*channel, string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.channels[w.ID]; ok {
		if !ch.same(w) {
			return nil, kindProtocol, "channel " + w.ID + " was first configured otherwise"
		}
		return ch, "", ""
	}
	if kind, text := channelRefusal(w); kind != "" {
		// Not kept: a later call on this id tries again.
		return nil, kind, text
	}
	t := newTransport(w.Keepalive)
	ch := &channel{target: w.Target, keepalive: w.Keepalive, transport: t,
		client: bankpbconnect.NewBankClient(&http.Client{Transport: t}, "http://"+w.Target, connect.WithGRPC())}
	s.channels[w.ID] = ch
	s.log.Printf("channel %s: %s, keepalive %+v", w.ID, w.Target, w.Keepalive)
	return ch, "", ""
}

// call makes c once and reports what connect-go returned.
func (s *session) call(c wireCall) {
	m, ok := methods[c.Method]
	if !ok {
		s.callError(c.ID, kindUnsupported, "no method %q", c.Method)
		return
	}
	req := m.request()
	if err := protojson.Unmarshal(c.Request, req); err != nil {
		s.callError(c.ID, kindBadRequest, "%v", err)
		return
	}
	if c.WaitForReady {
		s.callError(c.ID, kindUnsupported, "connect-go has no wait-for-ready: a call is one HTTP request")
		return
	}
	ch, kind, text := s.channelFor(c.Channel)
	if ch == nil {
		s.callError(c.ID, kind, "%s", text)
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, time.Duration(c.DeadlineMS)*time.Millisecond)
	defer cancel()
	ctx, info := connect.NewClientContext(ctx)
	md := requestHeader(c.Metadata)
	start := time.Now()
	resp, err := m.invoke(ctx, ch.client, req, md)
	elapsed := time.Since(start)
	code, message := status(err)
	if code > maxCode {
		s.log.Printf("call %d: connect-go surfaced code %d, outside the protocol's 0 to 16: reported as UNKNOWN", c.ID, code)
		code = connect.CodeUnknown
	}
	r := wireResult{Type: "result", ID: c.ID, Code: codeNames[code], CodeNum: uint32(code), Message: message,
		Response: json.RawMessage("null"), ElapsedMS: float64(elapsed.Microseconds()) / 1000,
		Headers: s.mdMap(c.ID, info.ResponseHeader()), Trailers: s.mdMap(c.ID, info.ResponseTrailer())}
	if err == nil {
		b, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(resp)
		if err != nil {
			s.log.Printf("call %d: marshal response: %v", c.ID, err) // cannot happen for generated messages
		}
		r.Response = b
	}
	s.out.send(r)
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

// codeNames are the canonical status names by number; connect-go's own
// (connect.Code.String) are lower-case, "unavailable", and it has no
// name for OK.
var codeNames = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// mdMap is h as the protocol carries metadata: never nil, names in
// lower case as HTTP/2 sends them (net/http canonicalizes them), -bin
// values base64, standard and padded. A -bin value that is not base64
// is passed as received, and logged.
func (s *session) mdMap(id int64, h http.Header) map[string][]string {
	m := make(map[string][]string, len(h))
	for k, vs := range h {
		k = strings.ToLower(k)
		if strings.HasSuffix(k, "-bin") {
			enc := make([]string, len(vs))
			for i, v := range vs {
				b, err := connect.DecodeBinaryHeader(v)
				if err != nil {
					s.log.Printf("call %d: %s value %q: %v", id, k, v, err)
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
