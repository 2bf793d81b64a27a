package stackbuild

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite sources.tgz from the repository's adapters/")

// adaptersDir is the repository's adapters/, from this package's directory.
const adaptersDir = "../../adapters"

// TestSourcesFresh: the embedded archive holds exactly the adapters'
// build sources as they are in the tree.
func TestSourcesFresh(t *testing.T) {
	tree, err := readTree(adaptersDir)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		tgz, err := writeArchive(tree)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("sources.tgz", tgz, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote sources.tgz: %d files, %d bytes", len(tree), len(tgz))
		return
	}
	got, err := readArchive(sourcesTGZ)
	if err != nil {
		t.Fatal(err)
	}
	index := func(fs []file) map[string]string {
		m := map[string]string{}
		for _, f := range fs {
			m[f.path] = f.mode.String() + " " + string(f.data)
		}
		return m
	}
	if d := cmp.Diff(index(tree), index(got)); d != "" {
		// The diff of whole files would drown the names: say which.
		var stale []string
		want, have := index(tree), index(got)
		for p := range want {
			if have[p] != want[p] {
				stale = append(stale, p)
			}
		}
		for p := range have {
			if _, ok := want[p]; !ok {
				stale = append(stale, p+" (gone from the tree)")
			}
		}
		t.Errorf("sources.tgz is stale against adapters/ in %s; refresh it with\n\tgo test ./internal/stackbuild -run TestSourcesFresh -update",
			strings.Join(stale, ", "))
	}
}

// TestSourcesSelection: the archive takes what each build needs and
// leaves out tests, helpers and installed packages.
func TestSourcesSelection(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"gokit/go.mod", true},
		{"gokit/bankpb/bank_grpc_pre164.pb.go", true},
		{"grpcgo/newclient_pre163.go", true},
		{"grpcgo/adapter_test.go", false},
		{"gokit/clientkit/clientkittest/harness.go", false},
		{"gokit/gen.sh", false},
		{"gokit/.bin/protoc-gen-go", false},
		{"grpcjs/adapter.js", true},
		{"grpcjs/package-lock.json", true},
		{"grpcjs/adapter-grpcjs", true},
		{"grpcjs/test/harness.js", false},
		{"grpcjs/node_modules/@grpc/grpc-js/package.json", false},
		{"grpcjs/README.md", false},
		{"grpcio/adapter.py", true},
		{"grpcio/tests/test_adapter.py", false},
		{"grpcio/__pycache__/bank.cpython-311.pyc", false},
		{"PROTOCOL.md", false},
	} {
		if got := includeSource(tc.path); got != tc.want {
			t.Errorf("includeSource(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

// TestShipped: the shipped releases are read from the embedded go.mod
// and package.json, and match the tree's.
func TestShipped(t *testing.T) {
	for _, tc := range []struct{ stack, file, want string }{
		{"grpc-go", "grpcgo/go.mod", "google.golang.org/grpc "},
		{"connect-go", "connectgo/go.mod", "connectrpc.com/connect "},
		{"grpc-js", "grpcjs/package.json", `"@grpc/grpc-js": "`},
	} {
		ref, err := Parse(tc.stack)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(adaptersDir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), tc.want+ref.Version) {
			t.Errorf("Parse(%q) = %s, but %s does not require %s%s", tc.stack, ref, tc.file, tc.want, ref.Version)
		}
	}
}
