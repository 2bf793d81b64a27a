package gokit

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// envRequireProtoc set to "1" makes a missing protoc a failure of
// TestGeneratedFresh rather than a skip; .ci/run sets it.
const envRequireProtoc = "RPCBENCH_REQUIRE_PROTOC"

// TestGeneratedFresh: bankpb/ is what gen.sh makes from the committed
// .proto today, byte for byte.
func TestGeneratedFresh(t *testing.T) {
	if _, err := exec.LookPath("protoc"); err != nil {
		msg := "protoc not found: apt-get install protobuf-compiler (3.21.12) to check bankpb/ against bank.proto"
		if os.Getenv(envRequireProtoc) == "1" {
			t.Fatal(msg + " (" + envRequireProtoc + "=1)")
		}
		t.Skip(msg)
	}
	out := t.TempDir()
	cmd := exec.Command("./gen.sh", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen.sh: %v\n%s", err, b)
	}
	for _, f := range []string{"bank.pb.go", "bank_grpc.pb.go", "bank_grpc_pre164.pb.go", "bankpbconnect/bank.connect.go"} {
		want, err := os.ReadFile(filepath.Join(out, "bankpb", f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("bankpb", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("bankpb/%s differs from what gen.sh makes now; run adapters/gokit/gen.sh and commit the result", f)
		}
	}
}
