package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// TestSIGTERMDrains: SIGTERM with a get executing drains the server: the
// connection gets the drain frame naming the get, the get's answer, then
// the server's FIN, and rpcserver exits 0 once the client has closed,
// having logged the drain's start and its end with no connection cut.
func TestSIGTERMDrains(t *testing.T) {
	logPath := t.TempDir() + "/server.log"
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"-log", logPath, "-" + serverapi.FlagDrainTimeout, "10s"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading announce line: %v", err)
	}
	go io.Copy(io.Discard, pr)
	addr, err := serverapi.ParseAnnounce(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer nc.Close()
	get := proto.Frame{Type: proto.TypeRequest, ID: 1, BudgetMs: 5000, Method: "get", Payload: []byte("account=a sleep=300")}
	b, err := proto.AppendFrame(nil, &get)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(b); err != nil {
		t.Fatal(err)
	}
	awaitCounter(t, addr, func(c serverapi.Counters) bool { return c.RequestsGet >= 1 })

	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	fr := proto.NewFrameReader(nc, proto.TypeResponse, 0)
	var got []string
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Errorf("the connection ended with %v, want EOF (the server's FIN)", err)
			}
			break
		}
		got = append(got, f.Type.String()+" "+f.Status.String())
	}
	if diff := cmp.Diff([]string{"DRAIN OK", "RESPONSE OK"}, got); diff != "" {
		t.Errorf("frames after SIGTERM (-want +got):\n%s", diff)
	}
	nc.Close()
	awaitExit0(t, done, "its drain")
	evs := readLog(t, logPath)
	// The test's connection is the first accepted; the control
	// connection awaitCounter closed may not have been seen closed by
	// the server when the drain began, and gets a drain of its own.
	var drain []string
	for _, e := range evs {
		switch e.Name {
		case serverapi.EventDrainStart:
			drain = append(drain, e.Name)
		case serverapi.EventDrain, serverapi.EventDrained:
			if conn, _ := e.Int(serverapi.KeyConn); conn == 1 {
				drain = append(drain, e.Name)
			}
		case serverapi.EventDrainDone:
			drain = append(drain, e.String())
		}
	}
	want := []string{serverapi.EventDrainStart, serverapi.EventDrain, serverapi.EventDrained, serverapi.EventDrainDone + " open=0"}
	if diff := cmp.Diff(want, drain); diff != "" {
		t.Errorf("drain events (-want +got):\n%s", diff)
	}
}

// awaitCounter polls the server's counters until cond holds: nothing
// else tells this test that the server has read a request.
func awaitCounter(t *testing.T, addr string, cond func(serverapi.Counters) bool) {
	t.Helper()
	c, err := client.New(addr, client.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	limit := time.Now().Add(10 * time.Second)
	for {
		r := c.Do(context.Background(), client.Call{Method: serverapi.MethodStats, Idempotent: true})
		if r.Status == proto.StatusOK {
			ctr, err := serverapi.ParseCounters(r.Payload)
			if err != nil {
				t.Fatal(err)
			}
			if cond(ctr) {
				return
			}
		}
		if time.Now().After(limit) {
			t.Fatal("the server never read the request")
		}
		time.Sleep(time.Millisecond)
	}
}
