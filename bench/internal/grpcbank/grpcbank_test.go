package grpcbank

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb"
	"github.com/rpcbench/rpcbench/bench/internal/workload"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/serverproc"
)

func TestAnswerRoundTrip(t *testing.T) {
	tests := []struct {
		answer string
		want   *bankpb.AccountReply
	}{
		{"account=acct-17 balance=1000 budget=5000 exec=0 replayed=false",
			&bankpb.AccountReply{Account: "acct-17", Balance: 1000, BudgetMs: 5000}},
		{"account=a\u00a0b balance=-3 budget=4294967295 exec=7 replayed=true",
			&bankpb.AccountReply{Account: "a\u00a0b", Balance: -3, BudgetMs: 4294967295, Exec: 7, Replayed: true}},
	}
	for _, tt := range tests {
		t.Run(tt.answer, func(t *testing.T) {
			got, err := ParseAnswer([]byte(tt.answer))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("ParseAnswer (-want +got):\n%s", diff)
			}
			if back := string(AppendAnswer(nil, got)); back != tt.answer {
				t.Errorf("AppendAnswer: got %q, want %q", back, tt.answer)
			}
		})
	}
}

func TestParseAnswerRejects(t *testing.T) {
	for _, answer := range []string{
		"account=a balance",
		"account=a balance=ten",
		"account=a replayed=maybe",
		"account=a colour=red",
	} {
		if _, err := ParseAnswer([]byte(answer)); !errors.Is(err, ErrAnswer) {
			t.Errorf("ParseAnswer(%q): got %v, want an error wrapping ErrAnswer", answer, err)
		}
	}
}

// TestGetBothServers makes the grpc-bank rows' calls against both of
// their servers, grpc-go's (NewServer, in this process) and rpcserver
// -grpc (built and started as the benchmark starts it), and checks that
// every answer is its own account's, the bank's default, and that
// rpcserver's log holds one execution of each of its gets. It asserts
// nothing about speed.
func TestGetBothServers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and spawns rpcserver")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Stop()
		<-served
	}()

	build := exec.CommandContext(ctx, "go", "build", "-o", dir+string(os.PathSeparator), "github.com/rpcbench/rpcbench/cmd/rpcserver")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build rpcserver: %v\n%s", err, out)
	}
	logPath := filepath.Join(dir, "rpcserver.log")
	spec := serverproc.RPCServer{Bin: filepath.Join(dir, "rpcserver"), LogPath: logPath, GRPC: true, Stderr: os.Stderr}.Spec()
	rpcserver, err := serverproc.StartAwait(ctx, spec, serverproc.StartTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer rpcserver.Stop()

	reqs := workload.Requests()
	accounts := []int{0, 17, 42, 63, 17}
	for _, tt := range []struct{ name, addr string }{
		{"grpc-go", ln.Addr().String()},
		{"rpcserver-grpc", rpcserver.Addr},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Dial(tt.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, i := range accounts {
				req := reqs[i]
				got, err := c.Call(ctx, req)
				if err != nil {
					t.Fatalf("get %s: %v", req, err)
				}
				if err := workload.Check(req, got); err != nil {
					t.Errorf("get %s: %v", req, err)
				}
				r, err := ParseAnswer(got)
				if err != nil {
					t.Fatal(err)
				}
				if r.GetAccount() != workload.Account(i) || r.GetBalance() != workload.DefaultBalance || r.GetExec() != 0 || r.GetBudgetMs() <= 0 {
					t.Errorf("get %s: got %q, want account %s, balance %d, exec 0 and a budget", req, got, workload.Account(i), workload.DefaultBalance)
				}
			}
		})
	}

	// The server's log is the oracle of what rpcserver executed.
	rpcserver.Stop()
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, err := serverapi.ReadEvents(f)
	if err != nil {
		t.Fatal(err)
	}
	var executed, want []string
	for _, e := range events {
		if e.Name == serverapi.EventExec && e.Text(serverapi.KeyWire) == serverapi.WireGRPC && e.Text(serverapi.KeyMethod) == "get" {
			executed = append(executed, e.Text(serverapi.KeyAccount))
		}
	}
	for _, i := range accounts {
		want = append(want, workload.Account(i))
	}
	slices.Sort(executed)
	slices.Sort(want)
	if diff := cmp.Diff(want, executed); diff != "" {
		t.Errorf("rpcserver's EXEC events of gRPC gets, by account (-want +got):\n%s", diff)
	}
}
