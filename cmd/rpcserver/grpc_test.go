package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// TestGRPCMode: with -grpc one address serves both wires; ctl.fault
// with wire=grpc sets a gRPC rule, a gRPC debit (on x/net's HTTP/2
// client, h2c) meets it, and ctl.stats with wire=grpc counts it in
// counters serverapi.ParseCounters reads, while ctl.stats without it
// still answers rpcbench's side.
func TestGRPCMode(t *testing.T) {
	logPath := t.TempDir() + "/server.log"
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"-log", logPath, "-grpc"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	addr, _ := strings.CutPrefix(strings.TrimSpace(line), serverapi.AnnouncePrefix)
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("server did not stop after SIGTERM")
		}
	}
	defer stop()

	c, err := client.New(addr, client.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctl := func(method, payload string) client.Result {
		r := c.Do(context.Background(), client.Call{Method: method, Idempotent: method != serverapi.MethodFault, Payload: []byte(payload)})
		if r.Status != proto.StatusOK {
			t.Fatalf("%s %q: %v %q %v", method, payload, r.Status, r.Payload, r.Err)
		}
		return r
	}
	if r := ctl(serverapi.MethodFault, "wire=grpc kind=unavailable_after_exec method=debit count=1"); !strings.HasPrefix(string(r.Payload), "wire=grpc kind=unavailable_after_exec") {
		t.Errorf("ctl.fault answered %q", r.Payload)
	}

	tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	// DebitRequest{account: "a", amount: 10}, length-prefixed.
	msg := []byte{0x0a, 0x01, 'a', 0x10, 0x0a}
	body := append([]byte{0, 0, 0, 0, byte(len(msg))}, msg...)
	req, _ := http.NewRequest("POST", "http://"+addr+"/rpcbench.bank.v1.Bank/Debit", bytes.NewReader(body))
	req.Header.Set("content-type", "application/grpc")
	req.Header.Set("te", "trailers")
	req.Header.Set("x-rpcbench-call", "c1")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := resp.Header.Get("grpc-status"); got != "14" {
		t.Errorf("trailers-only grpc-status %q, want 14 (header %v, trailer %v)", got, resp.Header, resp.Trailer)
	}

	g, err := serverapi.ParseCounters(ctl(serverapi.MethodStats, "wire=grpc").Payload)
	if err != nil {
		t.Fatal(err)
	}
	if g.RequestsDebit != 1 || g.ExecDebit != 1 || g.FaultsFired != 1 || g.Unavailable != 1 {
		t.Errorf("gRPC counters %+v, want requests.debit=1 exec.debit=1 faults_fired=1 unavailable=1", g)
	}
	rc, err := serverapi.ParseCounters(ctl(serverapi.MethodStats, "").Payload)
	if err != nil {
		t.Fatal(err)
	}
	if rc.RequestsDebit != 0 || rc.RequestsCtl < 2 {
		t.Errorf("rpcbench counters %+v, want requests.debit=0 and the control calls", rc)
	}
	ctl(serverapi.MethodClear, "")
	stop()

	evs := readLog(t, logPath)
	var execs, attempts int
	for _, e := range evs {
		switch e.Name {
		case serverapi.EventExec:
			execs++
			if e.Text(serverapi.KeyCall) != "c1" || e.Text(serverapi.KeyWire) != "grpc" {
				t.Errorf("EXEC %v, want call=c1 wire=grpc", e)
			}
		case serverapi.EventAttempt:
			attempts++
		case serverapi.EventListen:
			if !strings.Contains(e.Text(serverapi.KeyConfig), "grpc=true") {
				t.Errorf("LISTEN config %q does not say grpc=true", e.Text(serverapi.KeyConfig))
			}
		}
	}
	if execs != 1 || attempts != 1 {
		t.Errorf("%d EXEC and %d ATTEMPT events, want 1 and 1", execs, attempts)
	}
}
