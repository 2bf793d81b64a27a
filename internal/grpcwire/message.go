package grpcwire

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// The messages of proto/rpcbench/bank/v1/bank.proto, hand-encoded with
// protowire: field numbers and wire types below must match the .proto,
// which TestFieldsMatchProto checks against the file itself.
const (
	fieldGetAccount = 1 // GetRequest.account, string
	fieldGetSleepMs = 2 // GetRequest.sleep_ms, int64
	fieldGetWorkMs  = 3 // GetRequest.work_ms, int64

	fieldDebitAccount = 1 // DebitRequest.account, string
	fieldDebitAmount  = 2 // DebitRequest.amount, int64
	fieldDebitSleepMs = 3 // DebitRequest.sleep_ms, int64
	fieldDebitWorkMs  = 4 // DebitRequest.work_ms, int64

	fieldEchoPayload = 1 // EchoRequest.payload and EchoReply.payload, bytes

	fieldReplyAccount  = 1 // AccountReply.account, string
	fieldReplyBalance  = 2 // AccountReply.balance, int64
	fieldReplyExec     = 3 // AccountReply.exec, int64
	fieldReplyReplayed = 4 // AccountReply.replayed, bool
	fieldReplyBudgetMs = 5 // AccountReply.budget_ms, int64
)

// errMessage is wrapped by every decoding error: the request's message
// is not a valid encoding of its type, which the server answers INTERNAL,
// as grpc-go's own server answers a request it cannot unmarshal.
var errMessage = errors.New("grpcwire: malformed request message")

// errArgument is wrapped by the decoding errors of a well-formed message
// whose values the bank's payload text cannot carry (INVALID_ARGUMENT).
var errArgument = errors.New("grpcwire: invalid argument")

// request is a decoded request message: the fields of GetRequest,
// DebitRequest or EchoRequest. account and payload alias the message.
type request struct {
	account             []byte
	amount, sleep, work int64
	payload             []byte
}

// field is one field the decoder knows for a method: its number, its
// wire type and where its value goes.
type fieldSpec struct {
	num protowire.Number
	typ protowire.Type
	set func(r *request, v []byte, n uint64)
}

var (
	setAccount = func(r *request, v []byte, _ uint64) { r.account = v }
	setAmount  = func(r *request, _ []byte, n uint64) { r.amount = int64(n) }
	setSleep   = func(r *request, _ []byte, n uint64) { r.sleep = int64(n) }
	setWork    = func(r *request, _ []byte, n uint64) { r.work = int64(n) }
	setPayload = func(r *request, v []byte, _ uint64) { r.payload = v }
)

// requestFields are the known fields of each method's request message.
var requestFields = map[string][]fieldSpec{
	"get": {
		{fieldGetAccount, protowire.BytesType, setAccount},
		{fieldGetSleepMs, protowire.VarintType, setSleep},
		{fieldGetWorkMs, protowire.VarintType, setWork},
	},
	"debit": {
		{fieldDebitAccount, protowire.BytesType, setAccount},
		{fieldDebitAmount, protowire.VarintType, setAmount},
		{fieldDebitSleepMs, protowire.VarintType, setSleep},
		{fieldDebitWorkMs, protowire.VarintType, setWork},
	},
	"echo": {
		{fieldEchoPayload, protowire.BytesType, setPayload},
	},
}

// decodeRequest decodes method's request message b. Unknown fields are
// skipped, as proto3 requires; a known field that comes twice keeps its
// last value, as proto does; a known field with another wire type is an
// error. The result aliases b.
func decodeRequest(method string, b []byte) (request, error) {
	var r request
	fields, ok := requestFields[method]
	if !ok {
		return r, fmt.Errorf("grpcwire: no request message for method %q", method)
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return r, fmt.Errorf("%w: tag: %v", errMessage, protowire.ParseError(n))
		}
		b = b[n:]
		var spec *fieldSpec
		for i := range fields {
			if fields[i].num == num {
				spec = &fields[i]
			}
		}
		if spec == nil {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return r, fmt.Errorf("%w: unknown field %d: %v", errMessage, num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		if typ != spec.typ {
			return r, fmt.Errorf("%w: field %d has wire type %d, want %d", errMessage, num, typ, spec.typ)
		}
		switch typ {
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return r, fmt.Errorf("%w: field %d: %v", errMessage, num, protowire.ParseError(n))
			}
			spec.set(&r, nil, v)
			b = b[n:]
		case protowire.BytesType:
			// ConsumeBytes checks the length against what is left
			// before slicing; nothing is allocated.
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return r, fmt.Errorf("%w: field %d: %v", errMessage, num, protowire.ParseError(n))
			}
			spec.set(&r, v, 0)
			b = b[n:]
		}
	}
	if method != "echo" && !utf8.Valid(r.account) {
		return r, fmt.Errorf("%w: account is not valid UTF-8", errMessage)
	}
	return r, nil
}

// asciiSpace is the white space that separates the bank's payload and
// answer fields.
const asciiSpace = " \t\n\v\f\r"

func isASCIISpace(r rune) bool { return strings.ContainsRune(asciiSpace, r) }

// appendPayload appends r as the bank's payload text for method:
// "account=A amount=N sleep=N work=N" for get and debit (amount for
// debit only, sleep and work only when not 0), the bytes themselves for echo. An
// account the text cannot carry, holding white space, is an errArgument.
func appendPayload(dst []byte, method string, r *request) ([]byte, error) {
	if method == "echo" {
		return append(dst, r.payload...), nil
	}
	if bytes.ContainsAny(r.account, asciiSpace) {
		return dst, fmt.Errorf("%w: account %q holds white space", errArgument, r.account)
	}
	dst = append(dst, "account="...)
	dst = append(dst, r.account...)
	if method == "debit" {
		dst = append(dst, " amount="...)
		dst = strconv.AppendInt(dst, r.amount, 10)
	}
	if r.sleep != 0 {
		dst = append(dst, " sleep="...)
		dst = strconv.AppendInt(dst, r.sleep, 10)
	}
	if r.work != 0 {
		dst = append(dst, " work="...)
		dst = strconv.AppendInt(dst, r.work, 10)
	}
	return dst, nil
}

// appendReply appends the reply message for method's OK answer text: the
// echo's bytes as EchoReply, or the bank's "account=A balance=N budget=N
// exec=N replayed=B" as AccountReply. Zero values are left out, as proto3
// encoders leave them out.
func appendReply(dst []byte, method string, answer []byte) ([]byte, error) {
	if method == "echo" {
		if len(answer) == 0 {
			return dst, nil
		}
		dst = protowire.AppendTag(dst, fieldEchoPayload, protowire.BytesType)
		return protowire.AppendBytes(dst, answer), nil
	}
	var account []byte
	var balance, exec, budget int64
	var replayed bool
	// The bank separates its fields with ASCII white space only
	// (internal/bank's parseArgs): an account may hold other spaces.
	for _, tok := range bytes.FieldsFunc(answer, isASCIISpace) {
		k, v, ok := bytes.Cut(tok, []byte("="))
		if !ok {
			return dst, fmt.Errorf("grpcwire: answer %q: %q is not key=value", answer, tok)
		}
		var err error
		switch string(k) {
		case "account":
			account = v
		case "balance":
			balance, err = strconv.ParseInt(string(v), 10, 64)
		case "exec":
			exec, err = strconv.ParseInt(string(v), 10, 64)
		case "budget":
			budget, err = strconv.ParseInt(string(v), 10, 64)
		case "replayed":
			replayed, err = strconv.ParseBool(string(v))
		default:
			err = errors.New("unknown field")
		}
		if err != nil {
			return dst, fmt.Errorf("grpcwire: answer %q: field %q: %v", answer, tok, err)
		}
	}
	if len(account) > 0 {
		dst = protowire.AppendTag(dst, fieldReplyAccount, protowire.BytesType)
		dst = protowire.AppendBytes(dst, account)
	}
	for _, f := range []struct {
		num protowire.Number
		v   int64
	}{{fieldReplyBalance, balance}, {fieldReplyExec, exec}} {
		if f.v != 0 {
			dst = protowire.AppendTag(dst, f.num, protowire.VarintType)
			dst = protowire.AppendVarint(dst, uint64(f.v))
		}
	}
	if replayed {
		dst = protowire.AppendTag(dst, fieldReplyReplayed, protowire.VarintType)
		dst = protowire.AppendVarint(dst, 1)
	}
	if budget != 0 {
		dst = protowire.AppendTag(dst, fieldReplyBudgetMs, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(budget))
	}
	return dst, nil
}
