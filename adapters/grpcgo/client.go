package main

import (
	"context"
	"encoding/base64"
	"log"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb"
	"github.com/rpcbench/rpcbench/adapters/gokit/clientkit"
)

// clientStack is grpc-go's client for clientkit.
var clientStack = clientkit.Stack{Name: "grpc-go", Version: grpc.Version, Capabilities: clientkit.Capabilities{
	RetryPolicy: true,
	// grpc-go parses hedgingPolicy into nothing: it is accepted and
	// ignored (gRFC A6 "Go except hedging").
	Hedging: false, Throttling: true, TransparentRetry: true,
	Keepalive: true, Pushback: true, WaitForReady: true,
	// grpc-go's retryPolicy has no perAttemptRecvTimeout.
	PerAttempt: false},
	Dial: dialChannel}

// conn is one grpc.ClientConn.
type conn struct {
	cc     *grpc.ClientConn
	client bankpb.BankClient
}

// dialChannel builds a grpc.ClientConn with w's service config as its default
// and w's keepalive, and nothing else but plaintext.
func dialChannel(w clientkit.Channel, log *log.Logger) (clientkit.Conn, error) {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	sc := w.CompactConfig()
	if sc != nil {
		opts = append(opts, grpc.WithDefaultServiceConfig(string(sc)))
	}
	if k := w.Keepalive; k != nil {
		opts = append(opts, grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time: time.Duration(k.TimeMS) * time.Millisecond, Timeout: time.Duration(k.TimeoutMS) * time.Millisecond,
			PermitWithoutStream: k.PermitWithoutStream}))
	}
	cc, err := newClient(w.Target, opts...)
	if err != nil {
		return nil, err
	}
	log.Printf("channel %s: %s, service config %s, keepalive %+v", w.ID, w.Target, sc, w.Keepalive)
	return &conn{cc: cc, client: bankpb.NewBankClient(cc)}, nil
}

func (c *conn) Close() { c.cc.Close() }

// Invoke makes call once through the generated client and reports what
// grpc-go returned.
func (c *conn) Invoke(ctx context.Context, call clientkit.Call, req proto.Message) clientkit.Outcome {
	ctx = metadata.NewOutgoingContext(ctx, metadata.New(call.Metadata))
	var header, trailer metadata.MD
	opts := []grpc.CallOption{grpc.Header(&header), grpc.Trailer(&trailer), grpc.WaitForReady(call.WaitForReady)}
	var resp proto.Message
	var err error
	start := time.Now()
	switch req := req.(type) {
	case *bankpb.GetRequest:
		resp, err = c.client.Get(ctx, req, opts...)
	case *bankpb.DebitRequest:
		resp, err = c.client.Debit(ctx, req, opts...)
	case *bankpb.EchoRequest:
		resp, err = c.client.Echo(ctx, req, opts...)
	}
	elapsed := time.Since(start)
	// grpc-go surfaces only codes 0 to 16: status.FromError maps others
	// to UNKNOWN.
	st := status.Convert(err)
	o := clientkit.Outcome{Code: uint32(st.Code()), Message: st.Message(), Headers: mdMap(header), Trailers: mdMap(trailer),
		Elapsed: elapsed}
	if err == nil {
		o.Response = resp
	}
	return o
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
