package serverkit

import (
	"context"
	"errors"
	"log"
	"net"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// fakeServer records how it was stopped; its Shutdown blocks until ctx
// ends when hang is set.
type fakeServer struct {
	hang     bool
	shutdown int // Shutdown calls
	closed   int // Close calls
}

// Serve serves nothing.
func (f *fakeServer) Serve(ln net.Listener) error { return ln.Close() }

func (f *fakeServer) Shutdown(ctx context.Context) error {
	f.shutdown++
	if f.hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (f *fakeServer) Close() { f.closed++ }

func fakeStack(f *fakeServer, err error) Stack {
	return Stack{Name: "fake", Version: "1.2.3", New: func(*Handlers, *log.Logger) (Server, error) {
		if err != nil {
			return nil, err
		}
		return f, nil
	}}
}

// port is the serving line's address, whose port varies.
var port = regexp.MustCompile(`"addr":"127\.0\.0\.1:[0-9]+"`)

const initLine = `{"type":"init","protocol":"rpcbench-server/1","scenario":"s"}`

// TestRun: what Run writes and returns for each harness's input, and
// how it stops the server.
func TestRun(t *testing.T) {
	serving := `{"type":"serving","protocol":"rpcbench-server/1","stack":"fake","version":"1.2.3","runtime":"` + runtime.Version() + `","addr":"127.0.0.1:PORT"}`
	tests := []struct {
		name      string
		in        []string
		hang      bool
		serveErr  error
		out       []string
		status    int
		shutdowns int // of the server
		closes    int
	}{
		{"shutdown, then end of stdin", []string{initLine, `{"type":"shutdown"}`}, false, nil,
			[]string{serving, `{"type":"shutdown_ok"}`}, ExitOK, 1, 0},
		{"shutdown twice stops once", []string{initLine, `{"type":"shutdown"}`, `{"type":"shutdown"}`}, false, nil,
			[]string{serving, `{"type":"shutdown_ok"}`, `{"type":"shutdown_ok"}`}, ExitOK, 1, 0},
		{"end of stdin stops without a line", []string{initLine}, false, nil,
			[]string{serving}, ExitOK, 1, 0},
		{"end of stdin before init", nil, false, nil, nil, ExitOK, 0, 0},
		{"init without a scenario", []string{`{"type":"init","protocol":"rpcbench-server/2"}`}, false, nil,
			[]string{serving}, ExitOK, 1, 0},
		{"graceful stop too slow", []string{initLine, `{"type":"shutdown"}`}, true, nil,
			[]string{serving, `{"type":"shutdown_ok"}`}, ExitOK, 1, 1},
		{"server cannot start", []string{initLine}, false, errors.New("no port"),
			[]string{`{"type":"fatal","text":"serving: no port"}`}, ExitNoServer, 0, 0},
		{"not JSON", []string{`{`}, false, nil,
			[]string{`{"type":"fatal","text":"line 1: not a JSON object: unexpected end of JSON input"}`}, ExitProtocol, 0, 0},
		{"no type", []string{`{"protocol":"x"}`}, false, nil,
			[]string{`{"type":"fatal","text":"line 1: no string \"type\""}`}, ExitProtocol, 0, 0},
		{"shutdown before init", []string{`{"type":"shutdown"}`}, false, nil,
			[]string{`{"type":"fatal","text":"line 1: shutdown before init"}`}, ExitProtocol, 0, 0},
		{"init without protocol", []string{`{"type":"init","scenario":"s"}`}, false, nil,
			[]string{`{"type":"fatal","text":"line 1: bad init: no \"protocol\""}`}, ExitProtocol, 0, 0},
		{"init with a number for protocol", []string{`{"type":"init","protocol":1}`}, false, nil,
			[]string{`{"type":"fatal","text":"line 1: bad init: json: cannot unmarshal number into Go struct field wireInit.protocol of type string"}`}, ExitProtocol, 0, 0},
		{"second init", []string{initLine, initLine}, false, nil,
			[]string{serving, `{"type":"fatal","text":"line 2: a second init"}`}, ExitProtocol, 0, 1},
		{"unknown type", []string{initLine, `{"type":"call","id":1}`}, false, nil,
			[]string{serving, `{"type":"fatal","text":"line 2: unknown type \"call\""}`}, ExitProtocol, 0, 1},
		{"shutdown with a field", []string{initLine, `{"type":"shutdown","now":true}`}, false, nil,
			[]string{serving, `{"type":"fatal","text":"line 2: bad shutdown: unknown field \"now\""}`}, ExitProtocol, 0, 1},
		{"line over 1 MiB", []string{initLine, `{"type":"` + strings.Repeat("x", maxLine) + `"}`}, false, nil,
			[]string{serving, `{"type":"fatal","text":"reading stdin: bufio.Scanner: token too long"}`}, ExitProtocol, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeServer{hang: tt.hang}
			var out syncBuffer
			in := strings.Join(tt.in, "\n")
			if in != "" {
				in += "\n"
			}
			status := Run(strings.NewReader(in), &out, &syncBuffer{}, fakeStack(f, tt.serveErr))
			if status != tt.status {
				t.Errorf("status: got %d, want %d", status, tt.status)
			}
			want := strings.Join(tt.out, "\n")
			if want != "" {
				want += "\n"
			}
			if got := port.ReplaceAllString(out.b.String(), `"addr":"127.0.0.1:PORT"`); got != want {
				t.Errorf("stdout:\ngot  %s\nwant %s", got, want)
			}
			if f.shutdown != tt.shutdowns || f.closed != tt.closes {
				t.Errorf("server: got %d Shutdown, %d Close; want %d, %d", f.shutdown, f.closed, tt.shutdowns, tt.closes)
			}
		})
	}
}
