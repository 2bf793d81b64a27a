package clientkit

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb"
)

// requests are the Bank methods by the protocol's name for them, each
// making its request message; a Conn's Invoke tells the method by the
// message's type.
var requests = map[string]func() proto.Message{
	"rpcbench.bank.v1.Bank/Get":   func() proto.Message { return &bankpb.GetRequest{} },
	"rpcbench.bank.v1.Bank/Debit": func() proto.Message { return &bankpb.DebitRequest{} },
	"rpcbench.bank.v1.Bank/Echo":  func() proto.Message { return &bankpb.EchoRequest{} },
}

// call makes c once and reports what the library returned.
func (s *session) call(c Call) {
	request, ok := requests[c.Method]
	if !ok {
		s.callError(c.ID, KindUnsupported, "no method %q", c.Method)
		return
	}
	req := request()
	if err := protojson.Unmarshal(c.Request, req); err != nil {
		s.callError(c.ID, KindBadRequest, "%v", err)
		return
	}
	if c.WaitForReady && !s.stack.Capabilities.WaitForReady {
		text := s.stack.NoWaitForReady
		if text == "" {
			text = s.stack.Name + " has no wait-for-ready"
		}
		s.callError(c.ID, KindUnsupported, "%s", text)
		return
	}
	conn, ce := s.channelFor(c.Channel)
	if ce != nil {
		s.callError(c.ID, ce.Kind, "%s", ce.Text)
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, time.Duration(c.DeadlineMS)*time.Millisecond)
	defer cancel()
	o := conn.Invoke(ctx, c, req)
	r := wireResult{Type: "result", ID: c.ID, Code: CodeName(o.Code), CodeNum: o.Code, Message: o.Message,
		Response: json.RawMessage("null"), ElapsedMS: float64(o.Elapsed.Microseconds()) / 1000,
		Headers: nonNil(o.Headers), Trailers: nonNil(o.Trailers)}
	if o.Response != nil {
		b, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(o.Response)
		if err != nil {
			s.log.Printf("call %d: marshal response: %v", c.ID, err) // cannot happen for generated messages
		}
		r.Response = b
	}
	s.out.Send(r)
}

// codeNames are the canonical status names by number; libraries' own
// differ (grpc-go's "Unavailable", connect-go's "unavailable").
var codeNames = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// CodeName is code's canonical name, as the protocol spells it; one
// outside 0 to 16, which a library must not report (Outcome.Code), is
// "Code(17)", as grpc-go prints it.
func CodeName(code uint32) string {
	if int(code) < len(codeNames) {
		return codeNames[code]
	}
	return "Code(" + strconv.FormatUint(uint64(code), 10) + ")"
}

// nonNil is md, or no metadata for nil: the protocol's headers and
// trailers are objects, never null.
func nonNil(md map[string][]string) map[string][]string {
	if md == nil {
		return map[string][]string{}
	}
	return md
}
