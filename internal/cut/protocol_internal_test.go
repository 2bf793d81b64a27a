package cut

import (
	"encoding/json"
	"testing"
	"time"
)

// TestEncodeCall: a call goes out with its deadline rounded up to whole
// milliseconds, its name and key in metadata, and keepalive in
// milliseconds; absent options are absent, not null.
func TestEncodeCall(t *testing.T) {
	c := Call{
		Channel: Channel{ID: "ch1", Target: "127.0.0.1:9", ServiceConfig: json.RawMessage(`{"methodConfig":[]}`),
			Keepalive: &Keepalive{Time: 10 * time.Second, Timeout: 1500 * time.Microsecond}},
		Method: "rpcbench.bank.v1.Bank/Debit", Request: json.RawMessage(`{"account":"a","amount":"10"}`),
		Deadline: 1999100 * time.Microsecond, Name: "s-1", Key: "k-1", Metadata: map[string]string{"x-extra": "v"},
	}
	got, err := encodeCall(7, c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"call","id":7,"channel":{"id":"ch1","target":"127.0.0.1:9","service_config":{"methodConfig":[]},"keepalive":{"time_ms":10000,"timeout_ms":2,"permit_without_stream":false}},"method":"rpcbench.bank.v1.Bank/Debit","request":{"account":"a","amount":"10"},"deadline_ms":2000,"metadata":{"idempotency-key":"k-1","x-extra":"v","x-rpcbench-call":"s-1"},"wait_for_ready":false}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	c.Channel.ServiceConfig, c.Channel.Keepalive, c.Name, c.Key, c.Metadata = nil, nil, "", "", nil
	got, _ = encodeCall(8, c)
	want = `{"type":"call","id":8,"channel":{"id":"ch1","target":"127.0.0.1:9"},"method":"rpcbench.bank.v1.Bank/Debit","request":{"account":"a","amount":"10"},"deadline_ms":2000,"metadata":{},"wait_for_ready":false}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestDecodeResult: a result must carry exactly its fields, a code whose
// name and number agree, and a response only when OK.
func TestDecodeResult(t *testing.T) {
	const ok = `"type":"result","id":1,"code":"OK","code_num":0,"message":"","elapsed_ms":1,"headers":{},"trailers":{}`
	tests := []struct {
		line, want string
	}{
		{`{` + ok + `,"response":{"a":1}}`, ""},
		{`{` + ok + `,"response":null}`, `result 1: OK with response null, want an object`},
		{`{` + ok + `}`, `result has no "response"`},
		{`{` + ok + `,"response":{},"extra":1}`, `result has unknown field "extra"`},
		{`{` + ok + `,"response":{},"ID":1}`, `result has unknown field "ID"`},
		{`{"type":"result","id":1,"code":"UNAVAILABLE","code_num":14,"message":"m","elapsed_ms":1,"headers":{},"trailers":{},"response":{}}`, `result 1: UNAVAILABLE with a response, want null`},
		{`{"type":"result","id":1,"code":"Unavailable","code_num":14,"message":"m","elapsed_ms":1,"headers":{},"trailers":{},"response":null}`, `result 1: code "Unavailable" with code_num 14 is not a status code`},
		{`{"type":"result","id":1,"code":"UNAVAILABLE","code_num":14,"message":null,"elapsed_ms":1,"headers":{},"trailers":{},"response":null}`, `result has "message" null`},
		{`{"type":"result","id":"1","code":"UNAVAILABLE","code_num":14,"message":"","elapsed_ms":1,"headers":{},"trailers":{},"response":null}`, `result: json: cannot unmarshal string into Go struct field wireResult.id of type int64`},
	}
	for _, tt := range tests {
		m, err := parseLine([]byte(tt.line))
		if err != nil {
			t.Fatal(err)
		}
		_, err = decodeResult(m)
		if got := errString(err); got != tt.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tt.line, got, tt.want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestNames(t *testing.T) {
	for _, tt := range []struct {
		got  interface{ String() string }
		want string
	}{
		{Canceled, "CANCELLED"}, {Unauthenticated, "UNAUTHENTICATED"}, {Code(17), "UNKNOWN_CODE_17"},
		{Hung, "hung"}, {IgnoredShutdown, "ignored_shutdown"}, {Kind(0), "UNKNOWN_KIND_0"}, {Kind(99), "UNKNOWN_KIND_99"},
		{CallDuplicateID, "duplicate_id"}, {CallErrorKind(9), "UNKNOWN_CALL_ERROR_9"},
	} {
		if s := tt.got.String(); s != tt.want {
			t.Errorf("got %s, want %s", s, tt.want)
		}
	}
}
