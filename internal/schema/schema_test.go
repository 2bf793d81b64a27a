package schema

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// bankProto is the Bank's schema, as a user would give it.
func bankProto(t *testing.T) *Schema {
	t.Helper()
	s, err := FromProto(context.Background(), []string{"../../proto"}, "rpcbench/bank/v1/bank.proto")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A service of the test's own, with an import, a nested counter, and a
// method marked idempotent.
const shopProto = `syntax = "proto3";
package shop.v1;
import "google/protobuf/timestamp.proto";
import "shop/v1/common.proto";
service Orders {
  rpc Place(PlaceRequest) returns (Order);
  rpc Stats(StatsRequest) returns (StatsReply) { option idempotency_level = NO_SIDE_EFFECTS; }
  rpc Watch(StatsRequest) returns (stream StatsReply);
}
message PlaceRequest { string item = 1; int32 qty = 2; google.protobuf.Timestamp at = 3; }
message Order { string id = 1; }
message StatsRequest {}
message StatsReply { Counts counts = 1; string label = 2; bool ok = 3; repeated int64 history = 4; }
`

const commonProto = `syntax = "proto3";
package shop.v1;
message Counts { int64 placed = 1; uint32 refused = 2; string total = 3; }
`

func shop(t *testing.T) *Schema {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "shop/v1"), 0o755)
	os.WriteFile(filepath.Join(dir, "shop/v1/shop.proto"), []byte(shopProto), 0o644)
	os.WriteFile(filepath.Join(dir, "shop/v1/common.proto"), []byte(commonProto), 0o644)
	s, err := FromProto(context.Background(), []string{dir}, "shop/v1/shop.proto")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMethods(t *testing.T) {
	s := bankProto(t)
	want := []string{"rpcbench.bank.v1.Bank/Debit", "rpcbench.bank.v1.Bank/Echo", "rpcbench.bank.v1.Bank/Get"}
	if got := s.Methods(); !slices.Equal(got, want) {
		t.Fatalf("Methods() = %q, want %q", got, want)
	}
	for _, name := range []string{"rpcbench.bank.v1.Bank/Debit", "rpcbench.bank.v1.Bank.Debit", "/rpcbench.bank.v1.Bank/Debit"} {
		m, err := s.Method(name)
		if err != nil {
			t.Fatalf("Method(%q): %v", name, err)
		}
		if m.Path != "/rpcbench.bank.v1.Bank/Debit" || m.Name() != "rpcbench.bank.v1.Bank/Debit" {
			t.Errorf("Method(%q) = %s (%s)", name, m.Path, m.Name())
		}
		if m.Idempotency() != "" {
			t.Errorf("Debit's idempotency = %q, want none", m.Idempotency())
		}
	}
}

func TestMethodUnknown(t *testing.T) {
	s := bankProto(t)
	for _, c := range []struct{ name, says string }{
		{"rpcbench.bank.v1.Bank/Debti", "did you mean rpcbench.bank.v1.Bank/Debit?"},
		{"Bank/debit", "did you mean rpcbench.bank.v1.Bank/Debit?"},
		{"shop.v1.Orders/Place", "it has rpcbench.bank.v1.Bank/Debit, rpcbench.bank.v1.Bank/Echo, rpcbench.bank.v1.Bank/Get"},
		{"rpcbench.bank.v1.AccountReply", "no method"},
	} {
		_, err := s.Method(c.name)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Method(%q) = %v, want a usage error saying %q", c.name, err, c.says)
		}
	}
	_, err := shop(t).Method("shop.v1.Orders/Watch")
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "streams") {
		t.Errorf("Method(a streaming method) = %v, want a usage error saying it streams", err)
	}
}

func TestRequest(t *testing.T) {
	m, err := bankProto(t).Method("rpcbench.bank.v1.Bank/Debit")
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Request(`{"account": "acct-1", "amount": 10, "sleepMs": "5"}`)
	if err != nil {
		t.Fatal(err)
	}
	msg := dynamicpb.NewMessage(m.Desc.Input())
	if err := proto.Unmarshal(b, msg); err != nil {
		t.Fatal(err)
	}
	fields := msg.Descriptor().Fields()
	if got := msg.Get(fields.ByName("account")).String(); got != "acct-1" {
		t.Errorf("account = %q", got)
	}
	if got := msg.Get(fields.ByName("amount")).Int(); got != 10 {
		t.Errorf("amount = %d", got)
	}
	if got := msg.Get(fields.ByName("sleep_ms")).Int(); got != 5 {
		t.Errorf("sleep_ms = %d (lowerCamelCase sleepMs)", got)
	}
	for _, bad := range []struct{ js, says string }{
		{`{"acount": "x"}`, `unknown field "acount"`},
		{`{"amount": "ten"}`, "amount"},
		{`{"account": 1}`, "account"},
		{`not json`, "rpcbench.bank.v1.DebitRequest"},
	} {
		_, err := m.Request(bad.js)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("Request(%s) = %v, want a usage error naming %q", bad.js, err, bad.says)
		}
	}
}

// answer encodes a StatsReply with placed, refused and total set.
func answer(t *testing.T, m Method, placed int64, refused uint32, total string) []byte {
	t.Helper()
	msg := dynamicpb.NewMessage(m.Desc.Output())
	counts := msg.Descriptor().Fields().ByName("counts")
	c := msg.Mutable(counts).Message()
	cf := counts.Message().Fields()
	c.Set(cf.ByName("placed"), protoreflect.ValueOfInt64(placed))
	c.Set(cf.ByName("refused"), protoreflect.ValueOfUint32(refused))
	c.Set(cf.ByName("total"), protoreflect.ValueOfString(total))
	b, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInt(t *testing.T) {
	s := shop(t)
	m, err := s.Method("shop.v1.Orders/Stats")
	if err != nil {
		t.Fatal(err)
	}
	if m.Idempotency() != "no_side_effects" {
		t.Errorf("Stats's idempotency = %q, want no_side_effects", m.Idempotency())
	}
	b := answer(t, m, -42, 7, "12345")
	for path, want := range map[string]int64{"counts.placed": -42, "counts.refused": 7, "counts.total": 12345} {
		if got, err := m.Int(b, path); err != nil || got != want {
			t.Errorf("Int(%s) = %d, %v; want %d", path, got, err, want)
		}
	}
	if got, err := m.Int(nil, "counts.placed"); err != nil || got != 0 {
		t.Errorf("Int of an empty answer = %d, %v; want 0, as proto3 has an unset field", got, err)
	}
	if js, err := m.Answer(b); err != nil || !strings.Contains(js, `"placed":"-42"`) {
		t.Errorf("Answer = %s, %v", js, err)
	}
	for _, c := range []struct{ path, says string }{
		{"counts", "must be an integer"},
		{"ok", "must be an integer"},
		{"history", "repeated"},
		{"label.x", "no message"},
		{"counts.nope", `no field "nope"`},
		{"", "no field"},
	} {
		if err := m.CheckField(c.path); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("CheckField(%q) = %v, want a usage error saying %q", c.path, err, c.says)
		}
	}
	if err := m.CheckField("counts.placed"); err != nil {
		t.Errorf("CheckField(counts.placed) = %v", err)
	}
	b = answer(t, m, 0, 0, "many")
	if _, err := m.Int(b, "counts.total"); err == nil || !strings.Contains(err.Error(), "no integer") {
		t.Errorf("Int of a string that holds no integer = %v, want an error saying so", err)
	}
	if _, err := m.Int([]byte{0xff, 0xff}, "counts.placed"); err == nil {
		t.Error("Int of bytes that are no StatsReply: no error")
	}
}

// A FileDescriptorSet with the well-known import left out reads as the
// .proto files do: rpcbench has google/protobuf's files.
func TestDescriptorSet(t *testing.T) {
	s := shop(t)
	var set descriptorpb.FileDescriptorSet
	for _, name := range []string{"shop/v1/shop.proto", "shop/v1/common.proto"} {
		fd, err := s.files.FindFileByPath(name)
		if err != nil {
			t.Fatal(err)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	b, _ := proto.Marshal(&set)
	path := filepath.Join(t.TempDir(), "shop.binpb")
	os.WriteFile(path, b, 0o644)
	got, err := FromDescriptorSet(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := s.Methods(); !slices.Equal(got.Methods(), want) {
		t.Errorf("Methods() = %q, want %q", got.Methods(), want)
	}
	// Without common.proto, the set is incomplete: an error naming it.
	set.File = set.File[:1]
	b, _ = proto.Marshal(&set)
	os.WriteFile(path, b, 0o644)
	if _, err := FromDescriptorSet(path); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "shop/v1/common.proto is imported but not given") {
		t.Errorf("an incomplete set = %v, want an error naming the missing file", err)
	}
	os.WriteFile(path, []byte("not a descriptor set"), 0o644)
	if _, err := FromDescriptorSet(path); !errors.Is(err, ErrUsage) {
		t.Errorf("garbage = %v, want a usage error", err)
	}
}

func TestFromProtoErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.proto"), []byte("syntax = \"proto3\";\nmessage M { int32 x = ; }\n"), 0o644)
	_, err := FromProto(context.Background(), []string{dir}, "bad.proto")
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "bad.proto:2") {
		t.Errorf("a .proto that does not parse = %v, want a usage error naming bad.proto:2", err)
	}
	_, err = FromProto(context.Background(), []string{dir}, "missing.proto")
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "missing.proto") {
		t.Errorf("a missing .proto = %v, want a usage error naming it", err)
	}
}
