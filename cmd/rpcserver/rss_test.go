package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/serverproc"
)

// envRSS turns on TestGRPCZeroWindowRSS: a comma-separated list of
// connection counts, e.g. RPCBENCH_GRPC_RSS=10,40,80. With
// RPCBENCH_GRPC_RSS_BIN set, that rpcserver binary is measured instead
// of one built from this tree (so that two builds can be compared).
const envRSS = "RPCBENCH_GRPC_RSS"

// TestGRPCZeroWindowRSS measures what a real `rpcserver -grpc` process
// holds for clients that never grant send window: for each count N in
// RPCBENCH_GRPC_RSS, a fresh server with its defaults gets N connections,
// each of which sets SETTINGS_INITIAL_WINDOW_SIZE 0 and opens 256 Echo
// streams of 16 KiB, and reads (and discards) whatever the server sends.
// Once the server's counters stop moving, it logs VmRSS and VmHWM (the
// peak) from /proc/PID/status. It fails when the peak passes 256 MiB at
// 80 connections or fewer, the bound internal/grpcwire/SPEC.md states.
// Minutes, not seconds: never run by plain `go test`.
func TestGRPCZeroWindowRSS(t *testing.T) {
	spec := os.Getenv(envRSS)
	if spec == "" {
		t.Skip("set " + envRSS + "=10,40,80 to measure")
	}
	bin := os.Getenv(envRSS + "_BIN")
	if bin == "" {
		bin = t.TempDir() + "/rpcserver"
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want connection counts", envRSS, spec)
		}
		rss, hwm := measureZeroWindow(t, bin, n)
		t.Logf("conns=%d streams/conn=256 echo=16KiB: VmRSS %d MiB, VmHWM %d MiB", n, rss>>20, hwm>>20)
		if n <= 80 && hwm > 256<<20 {
			t.Errorf("conns=%d: peak RSS %d MiB, want under 256 MiB", n, hwm>>20)
		}
	}
}

// measureZeroWindow starts bin, loads it with n zero-window connections
// and returns its settled VmRSS and its VmHWM, in bytes.
func measureZeroWindow(t *testing.T, bin string, n int) (rss, hwm int64) {
	srv, err := serverproc.StartAwait(context.Background(), serverproc.RPCServer{Bin: bin, LogPath: os.DevNull, GRPC: true}.Spec(), serverproc.StartTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	addr := srv.Addr

	const streams, size = 256, 16 << 10
	var reqs bytes.Buffer
	fr := http2.NewFramer(&reqs, nil)
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	// EchoRequest{payload}, the whole message 16 KiB: the server's
	// largest request.
	msg := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), bytes.Repeat([]byte("x"), size-3))
	body := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(body[1:], uint32(len(msg)))
	body = append(body, msg...)
	for i := range streams {
		id := uint32(2*i + 1)
		hbuf.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/rpcbench.bank.v1.Bank/Echo"},
			{":authority", "rss"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hbuf.Bytes(), EndHeaders: true})
		for rest := body; len(rest) > 0; {
			k := min(len(rest), 16384)
			fr.WriteData(id, k == len(rest), rest[:k])
			rest = rest[k:]
		}
	}
	for range n {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		go io.Copy(io.Discard, nc)
		cf := http2.NewFramer(nc, nil)
		io.WriteString(nc, http2.ClientPreface)
		cf.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
		if _, err := nc.Write(reqs.Bytes()); err != nil {
			t.Fatal(err)
		}
	}

	c, err := client.New(addr, client.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Settled: the counters the load moves, unchanged for a second.
	var last string
	stable := time.Now()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		r := c.Do(context.Background(), client.Call{Method: serverapi.MethodStats, Idempotent: true, Payload: []byte("wire=" + serverapi.WireGRPC)})
		if r.Status != proto.StatusOK {
			t.Fatalf("ctl.stats: %v %v", r.Status, r.Err)
		}
		g, err := serverapi.ParseCounters(r.Payload)
		if err != nil {
			t.Fatal(err)
		}
		now := fmt.Sprint(g.RequestsEcho, g.ExecEcho, g.Unavailable, g.StreamsRefused, g.ConnsOpen)
		if now != last {
			last, stable = now, time.Now()
		} else if time.Since(stable) > time.Second {
			break
		}
	}
	t.Logf("conns=%d: gRPC counters requests.echo exec.echo unavailable streams_refused conns_open = %s", n, last)
	return procStatus(t, srv.PID, "VmRSS"), procStatus(t, srv.PID, "VmHWM")
}

// procStatus returns a field of /proc/PID/status given in kB, in bytes.
func procStatus(t *testing.T, pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}
