package serverproc_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/serverproc"
)

func shell(t *testing.T, script string) serverproc.Spec {
	t.Helper()
	if fi, err := os.Stat("/bin/sh"); err != nil || fi.IsDir() {
		t.Skip("no /bin/sh")
	}
	return serverproc.Spec{Bin: "/bin/sh", Args: []string{"-c", script}, Announce: serverapi.ParseAnnounce}
}

func TestStartAwaitFailures(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   string
	}{
		{"exits silently", "exit 3", "exited before announcing"},
		{"wrong line", "echo hello; exec sleep 10", `printed "hello"`},
		{"silent", "exec sleep 10", "did not announce within"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := serverproc.StartAwait(context.Background(), shell(t, tt.script), 200*time.Millisecond)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
			// StartAwait stops what it started: a sleeping child is
			// killed, not waited for.
			if d := time.Since(start); d > serverproc.StopGrace+5*time.Second {
				t.Errorf("StartAwait took %v", d)
			}
		})
	}
}

func TestStopEndsTheProcess(t *testing.T) {
	p, err := serverproc.StartAwait(context.Background(), shell(t, "echo "+serverapi.Announce("127.0.0.1:9")+"; exec sleep 60"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if p.Addr != "127.0.0.1:9" {
		t.Errorf("addr: got %q, want 127.0.0.1:9", p.Addr)
	}
	if err := p.Alive(); err != nil {
		t.Fatalf("alive: %v", err)
	}
	p.Stop()
	if err := p.Alive(); !errors.Is(err, serverproc.ErrExited) {
		t.Errorf("after Stop: got %v, want ErrExited", err)
	}
	p.Stop() // a second Stop returns at once
}

func TestRPCServerSpec(t *testing.T) {
	spec := serverproc.RPCServer{Bin: "rpcserver", Workers: 2, Chunk: true, Faults: []string{"kind=late", "kind=close"}}.Spec()
	got := strings.Join(spec.Args, " ")
	want := "-addr 127.0.0.1:0 -workers 2 -chunk -fault kind=late -fault kind=close"
	if got != want {
		t.Errorf("args: got %q, want %q", got, want)
	}
}
