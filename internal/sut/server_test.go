package sut

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/testexit"
)

// envFake makes the test binary a fake server adapter of the mode it
// names: it speaks the protocol as that mode says, serving nothing.
const envFake = "SUT_FAKE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(envFake); mode != "" {
		os.Exit(fake(mode))
	}
	testexit.Exit(m.Run())
}

// fake is a fake adapter's main. Modes: good (serves, writes the events
// of one debit, shuts down), silent (never serves), early (exits after
// serving), endless (an end with no start), unknown (a line with an
// unknown field), twice (two execs in one handler), twiceshared (two
// handlers open for one call, one writing two execs and the other
// none), shared (two handlers open for one call, one executing),
// claims (an end saying executed with no exec).
func fake(mode string) int {
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || !strings.Contains(in.Text(), `"init"`) {
		return 2
	}
	if mode == "silent" {
		for in.Scan() {
		}
		return 0
	}
	fmt.Println(`{"type":"serving","protocol":"rpcbench-server/1","stack":"fake","version":"1","runtime":"go","addr":"127.0.0.1:1"}`)
	switch mode {
	case "early":
		return 0
	case "endless":
		fmt.Println(`{"type":"end","call":"c","method":"Debit","executed":false,"ctx":"active","code":"OK"}`)
	case "unknown":
		fmt.Println(`{"type":"start","call":"c","method":"Debit","deadline_ms":null,"extra":1}`)
	case "twice":
		fmt.Println(`{"type":"start","call":"c","method":"Debit","deadline_ms":null}`)
		fmt.Println(`{"type":"exec","call":"c","method":"Debit","account":"a","amount":10,"balance":990}`)
		fmt.Println(`{"type":"exec","call":"c","method":"Debit","account":"a","amount":10,"balance":980}`)
	case "twiceshared":
		fmt.Println(`{"type":"start","call":"c","method":"Debit","deadline_ms":null}`)
		fmt.Println(`{"type":"start","call":"c","method":"Debit","deadline_ms":null}`)
		fmt.Println(`{"type":"exec","call":"c","method":"Debit","account":"a","amount":10,"balance":990}`)
		fmt.Println(`{"type":"exec","call":"c","method":"Debit","account":"a","amount":10,"balance":980}`)
		fmt.Println(`{"type":"end","call":"c","method":"Debit","executed":false,"ctx":"cancelled","code":"CANCELLED"}`)
		fmt.Println(`{"type":"end","call":"c","method":"Debit","executed":true,"ctx":"active","code":"OK"}`)
	case "shared":
		fmt.Println(`{"type":"start","call":"c","method":"Debit","deadline_ms":null}`)
		fmt.Println(`{"type":"start","call":"c","method":"Debit","deadline_ms":null}`)
		fmt.Println(`{"type":"exec","call":"c","method":"Debit","account":"a","amount":10,"balance":990}`)
		fmt.Println(`{"type":"end","call":"c","method":"Debit","executed":false,"ctx":"cancelled","code":"CANCELLED"}`)
		fmt.Println(`{"type":"end","call":"c","method":"Debit","executed":true,"ctx":"active","code":"OK"}`)
	case "claims":
		fmt.Println(`{"type":"start","call":"c","method":"Debit","deadline_ms":null}`)
		fmt.Println(`{"type":"end","call":"c","method":"Debit","executed":true,"ctx":"active","code":"OK"}`)
	default:
		fmt.Println(`{"type":"start","call":"c","method":"Debit","deadline_ms":99.5}`)
		fmt.Println(`{"type":"exec","call":"c","method":"Debit","account":"a","amount":10,"balance":990}`)
		fmt.Println(`{"type":"end","call":"c","method":"Debit","executed":true,"ctx":"active","code":"OK"}`)
	}
	for in.Scan() {
		if strings.Contains(in.Text(), `"shutdown"`) {
			fmt.Println(`{"type":"shutdown_ok"}`)
		}
	}
	return 0
}

func start(t *testing.T, mode string) (*Server, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return Start(ctx, Spec{Bin: exe, Env: append(os.Environ(), envFake+"="+mode)})
}

func TestGoodSession(t *testing.T) {
	s, err := start(t, "good")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	end, err := s.Await(ctx, func(e Event) bool { return e.Type == "end" })
	if err != nil {
		t.Fatal(err)
	}
	evs := s.Events()
	if len(evs) != 3 || *evs[0].DeadlineMs != 99.5 || evs[1].Amount != 10 || !end.Executed {
		t.Fatalf("got %+v, want start (99.5ms), exec of 10, end executed", evs)
	}
	if s.Info().Stack != "fake" {
		t.Fatalf("got info %+v", s.Info())
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestSharedCall: two handlers of one call, one executing, are no
// second exec, whichever ends first.
func TestSharedCall(t *testing.T) {
	s, err := start(t, "shared")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Await(ctx, func(e Event) bool { return e.Type == "end" && e.Executed }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestBrokenSessions: each way of breaking the protocol is an *Error,
// at Start or at Close.
func TestBrokenSessions(t *testing.T) {
	for _, tc := range []struct{ mode, want string }{
		{"early", "exited before shutdown_ok"},
		{"endless", "no handler open"},
		{"unknown", "unknown field"},
		{"twice", "a second exec"},
		{"twiceshared", "a second exec"},
		{"claims", "says executed, with no exec"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			s, err := start(t, tc.mode)
			if err == nil {
				err = s.Close()
			}
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an *Error saying %q", err, tc.want)
			}
		})
	}
}
