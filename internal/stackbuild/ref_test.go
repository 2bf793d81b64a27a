package stackbuild

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	shipped := func(name string) string { s, _ := lookup(name); return s.shipped() }
	for _, tc := range []struct {
		in   string
		want Ref
		err  string // a part of the error; "" for none
	}{
		{in: "grpc-go@v1.70.0", want: Ref{"grpc-go", "v1.70.0"}},
		{in: "grpc-go@1.70.0", want: Ref{"grpc-go", "v1.70.0"}},
		{in: "grpc-go@v1.86.0-dev", want: Ref{"grpc-go", "v1.86.0-dev"}},
		{in: "grpc-js@1.10.11", want: Ref{"grpc-js", "1.10.11"}},
		{in: "grpc-js@v1.10.11", want: Ref{"grpc-js", "1.10.11"}},
		{in: "grpcio@1.68.1", want: Ref{"grpcio", "1.68.1"}},
		{in: "grpcio@1.60.0rc1", want: Ref{"grpcio", "1.60.0rc1"}},
		{in: "connect-go@v1.19.1", want: Ref{"connect-go", "v1.19.1"}},
		{in: "connect-go@v1.18.1", err: "supports connectrpc.com/connect v1.19.0 and later"},
		{in: "grpc-go", want: Ref{"grpc-go", shipped("grpc-go")}},
		{in: "grpc-js", want: Ref{"grpc-js", shipped("grpc-js")}},
		{in: "grpcio", want: Ref{"grpcio", DebianGRPCIO}},
		{in: "connect-go", want: Ref{"connect-go", shipped("connect-go")}},
		{in: "grpc-java@1.2.3", err: `unknown stack "grpc-java" in "grpc-java@1.2.3": valid stacks are grpc-go, connect-go, grpc-js, grpcio`},
		{in: "", err: "unknown stack"},
		{in: "GRPC-GO", err: "unknown stack"},
		{in: "grpc-go@", err: "is not a release"},
		{in: "grpc-go@v1.70", err: "give a full release number such as grpc-go@v1."},
		{in: "grpc-go@latest", err: "is not a release"},
		{in: "grpc-js@1.10.11;rm", err: "is not a release"},
		{in: "grpcio@==1.68.1", err: "is not a release"},
		{in: "grpc-go@v1.59.0", err: "supports google.golang.org/grpc v1.60.0 and later"},
		{in: "grpc-js@1.7.3", err: "supports @grpc/grpc-js 1.8.0 and later"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
				}
				if again, err := Parse(got.String()); err != nil || again != got {
					t.Errorf("Parse(%q) = %v, %v; want String() to parse back", got.String(), again, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("Parse(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			if !errors.Is(err, ErrUsage) {
				t.Errorf("Parse(%q): %v is not ErrUsage", tc.in, err)
			}
		})
	}
}

func TestShippedRefs(t *testing.T) {
	for _, name := range Stacks() {
		ref, err := Parse(name)
		if err != nil {
			t.Fatal(err)
		}
		if ref.Version == "" || !ref.Shipped() {
			t.Errorf("Parse(%q) = %v: want the shipped release, Shipped() true", name, ref)
		}
		if err := func() error { _, err := Parse(ref.String()); return err }(); err != nil {
			t.Errorf("the shipped %v does not parse back: %v", ref, err)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"v1.60.1", "v1.60.1", 0},
		{"v1.60.1", "v1.63.0", -1},
		{"v1.9.0", "v1.10.0", -1},
		{"v1.100.0", "v1.99.9", 1},
		{"v1.86.0-dev", "v1.86.0", -1},
		{"v1.86.0-dev", "v1.85.9", 1},
		{"1.60.0rc1", "1.60.0", -1},
		{"1.60", "1.60.0", 0},
		{"1.51.1", "v1.51.1", 0},
		{"2.0.0", "1.99.99", 1},
	} {
		if got := compareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := compareVersions(tc.b, tc.a); got != -tc.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestNearby(t *testing.T) {
	releases := []string{"1.10.0", "1.8.0", "1.9.0", "1.10.1", "1.11.0", "1.12.0", "1.13.0", "1.7.0"}
	for _, tc := range []struct {
		want string
		n    int
		got  []string
	}{
		{"1.10.5", 2, []string{"1.10.0", "1.10.1", "1.11.0", "1.12.0"}},
		{"1.10.0", 1, []string{"1.9.0", "1.10.1"}},
		{"1.0.0", 3, []string{"1.7.0", "1.8.0", "1.9.0"}},
		{"9.0.0", 2, []string{"1.12.0", "1.13.0"}},
	} {
		if d := cmp.Diff(tc.got, nearby(releases, tc.want, tc.n)); d != "" {
			t.Errorf("nearby(%s, %d) (-want +got):\n%s", tc.want, tc.n, d)
		}
	}
}

func TestErrors(t *testing.T) {
	ref := Ref{"grpc-go", "v1.70.5"}
	rel := &ReleaseError{Ref: ref, Registry: "the Go module proxy", Nearby: []string{"v1.70.0", "v1.71.0"}}
	tool := &ToolchainError{Ref: ref, Tool: "go", Get: getGo, Err: errors.New(`exec: "go": executable file not found in $PATH`)}
	probe := &ProbeError{Ref: ref, Bin: "/c/adapter-grpcgo", Stack: "grpc-go", Version: "1.70.0"}
	for _, tc := range []struct {
		err      error
		is, isnt error
		text     string
	}{
		{rel, ErrNoSuchRelease, ErrNoToolchain,
			"stackbuild: grpc-go@v1.70.5: the Go module proxy has no release v1.70.5 of google.golang.org/grpc; nearby releases: v1.70.0, v1.71.0"},
		{tool, ErrNoToolchain, ErrNoSuchRelease, "stackbuild: grpc-go@v1.70.5 needs go, which is not usable here (exec: \"go\": executable file not found in $PATH): " + getGo},
		{probe, ErrProbe, ErrNoSuchRelease, "stackbuild: grpc-go@v1.70.5: the built adapter /c/adapter-grpcgo says it is grpc-go 1.70.0"},
	} {
		if !errors.Is(tc.err, tc.is) || errors.Is(tc.err, tc.isnt) {
			t.Errorf("%v: want errors.Is %v and not %v", tc.err, tc.is, tc.isnt)
		}
		if got := tc.err.Error(); got != tc.text {
			t.Errorf("got %q, want %q", got, tc.text)
		}
	}
}
