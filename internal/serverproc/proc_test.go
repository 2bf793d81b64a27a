package serverproc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
		{"exits silently", "exit 3", "serverproc: /bin/sh exited with status 3 before announcing its address"},
		{"exits cleanly", "exit 0", "serverproc: /bin/sh exited with status 0 before announcing its address"},
		{"exits complaining", "echo first >&2; echo 'rpcserver: bad flag' >&2; exit 2",
			`serverproc: /bin/sh exited with status 2 before announcing its address; its stderr ended: "first\nrpcserver: bad flag"`},
		{"killed", "kill -KILL $$", "serverproc: /bin/sh was killed (signal: killed) before announcing its address"},
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

// TestNotAnRPCServer: a --server that exits saying nothing, such as
// /bin/true, is named as the likely mistake; one that complains on stderr
// has its last lines quoted instead, while all of its stderr still
// reaches the caller's Stderr.
func TestNotAnRPCServer(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "rpcserver")
	script := "#!/bin/sh\nfor i in 1 2 3 4 5 6 7 8; do echo line $i >&2; done\nexit 2\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		bin  string
		want string
	}{
		{"/bin/true", "serverproc: /bin/true exited with status 0 before announcing its address (is /bin/true an rpcserver?)"},
		{fake, "serverproc: " + fake + ` exited with status 2 before announcing its address; its stderr ended: "line 4\nline 5\nline 6\nline 7\nline 8"`},
	}
	for _, tt := range tests {
		t.Run(tt.bin, func(t *testing.T) {
			if _, err := os.Stat(tt.bin); err != nil {
				t.Skip(err)
			}
			var stderr strings.Builder
			_, err := serverproc.StartAwait(context.Background(), serverproc.RPCServer{Bin: tt.bin, Stderr: &stderr}.Spec(), 10*time.Second)
			if got := fmt.Sprint(err); got != tt.want {
				t.Errorf("got %s\nwant %s", got, tt.want)
			}
			if tt.bin == fake && !strings.HasPrefix(stderr.String(), "line 1\n") {
				t.Errorf("Stderr got %q, want all of the fake's stderr", stderr.String())
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
