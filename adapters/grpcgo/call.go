package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/rpcbench/rpcbench/adapters/grpcgo/bankpb"
)

// channel is one grpc.ClientConn and the configuration it was built
// with.
type channel struct {
	target        string
	serviceConfig []byte // compacted; nil for none
	keepalive     *wireKeepalive
	cc            *grpc.ClientConn
	client        bankpb.BankClient
}

func (c *channel) same(w wireChannel) bool {
	ka, kb := c.keepalive, w.Keepalive
	return c.target == w.Target && bytes.Equal(c.serviceConfig, compact(w.ServiceConfig)) &&
		(ka == nil) == (kb == nil) && (ka == nil || *ka == *kb)
}

// method is one Bank method: its request message, and the generated
// client's call.
type method struct {
	request func() proto.Message
	invoke  func(ctx context.Context, c bankpb.BankClient, req proto.Message, opts ...grpc.CallOption) (proto.Message, error)
}

// methods are the Bank methods by the protocol's name for them.
var methods = map[string]method{
	"rpcbench.bank.v1.Bank/Get": {
		func() proto.Message { return &bankpb.GetRequest{} },
		func(ctx context.Context, c bankpb.BankClient, req proto.Message, opts ...grpc.CallOption) (proto.Message, error) {
			return c.Get(ctx, req.(*bankpb.GetRequest), opts...)
		}},
	"rpcbench.bank.v1.Bank/Debit": {
		func() proto.Message { return &bankpb.DebitRequest{} },
		func(ctx context.Context, c bankpb.BankClient, req proto.Message, opts ...grpc.CallOption) (proto.Message, error) {
			return c.Debit(ctx, req.(*bankpb.DebitRequest), opts...)
		}},
	"rpcbench.bank.v1.Bank/Echo": {
		func() proto.Message { return &bankpb.EchoRequest{} },
		func(ctx context.Context, c bankpb.BankClient, req proto.Message, opts ...grpc.CallOption) (proto.Message, error) {
			return c.Echo(ctx, req.(*bankpb.EchoRequest), opts...)
		}},
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
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	sc := compact(w.ServiceConfig)
	if sc != nil {
		opts = append(opts, grpc.WithDefaultServiceConfig(string(sc)))
	}
	if k := w.Keepalive; k != nil {
		opts = append(opts, grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time: time.Duration(k.TimeMS) * time.Millisecond, Timeout: time.Duration(k.TimeoutMS) * time.Millisecond,
			PermitWithoutStream: k.PermitWithoutStream}))
	}
	cc, err := grpc.NewClient(w.Target, opts...)
	if err != nil {
		// Not kept: a later call on this id tries again.
		return nil, kindConfig, err.Error()
	}
	ch := &channel{target: w.Target, serviceConfig: sc, keepalive: w.Keepalive, cc: cc, client: bankpb.NewBankClient(cc)}
	s.channels[w.ID] = ch
	s.log.Printf("channel %s: %s, service config %s, keepalive %+v", w.ID, w.Target, sc, w.Keepalive)
	return ch, "", ""
}

// call makes c once and reports what grpc-go returned.
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
	ch, kind, text := s.channelFor(c.Channel)
	if ch == nil {
		s.callError(c.ID, kind, "%s", text)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(c.DeadlineMS)*time.Millisecond)
	defer cancel()
	ctx = metadata.NewOutgoingContext(ctx, metadata.New(c.Metadata))
	var header, trailer metadata.MD
	start := time.Now()
	resp, err := m.invoke(ctx, ch.client, req, grpc.Header(&header), grpc.Trailer(&trailer), grpc.WaitForReady(c.WaitForReady))
	elapsed := time.Since(start)
	st := status.Convert(err)
	r := wireResult{Type: "result", ID: c.ID, Code: codeName(st.Code()), CodeNum: uint32(st.Code()), Message: st.Message(),
		Response: json.RawMessage("null"), ElapsedMS: float64(elapsed.Microseconds()) / 1000,
		Headers: mdMap(header), Trailers: mdMap(trailer)}
	if err == nil {
		b, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(resp)
		if err != nil {
			s.log.Printf("call %d: marshal response: %v", c.ID, err) // cannot happen for generated messages
		}
		r.Response = b
	}
	s.out.send(r)
}

// codeNames are the canonical status names by number; grpc-go's own
// (codes.Code.String) are CamelCase, "Unavailable".
var codeNames = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// codeName is c's canonical name. grpc-go surfaces only codes 0 to 16
// (status.FromError maps others to UNKNOWN), so the fallback is never
// sent as a valid result.
func codeName(c codes.Code) string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return c.String()
}

// mdMap is md as the protocol carries it: never nil, -bin values in
// base64.
func mdMap(md metadata.MD) map[string][]string {
	m := make(map[string][]string, len(md))
	for k, vs := range md {
		if strings.HasSuffix(k, "-bin") {
			enc := make([]string, len(vs))
			for i, v := range vs {
				enc[i] = base64.StdEncoding.EncodeToString([]byte(v))
			}
			vs = enc
		}
		m[k] = vs
	}
	return m
}
