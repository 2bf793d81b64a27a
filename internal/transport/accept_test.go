package transport_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/transport"
)

// script is a listener whose Accept answers from a list, then fails as
// a closed listener does.
type script struct {
	net.Listener
	answers []error // nil: a connection
}

func (l *script) Accept() (net.Conn, error) {
	if len(l.answers) == 0 {
		return nil, net.ErrClosed
	}
	err := l.answers[0]
	l.answers = l.answers[1:]
	if err != nil {
		return nil, err
	}
	a, b := net.Pipe()
	b.Close()
	return a, nil
}

func TestAccept(t *testing.T) {
	errClosed := errors.New("closed")
	emfile := errors.New("too many open files")
	tests := []struct {
		name    string
		answers []error
		stopped bool
		opens   int // how many connections open takes before it says stop
		want    error
		wantLog string // a substring of the log; empty for none
	}{
		{name: "open_says_stop", answers: []error{nil, nil}, opens: 1, want: errClosed},
		{name: "retried_after_error", answers: []error{emfile, emfile, nil}, opens: 0, want: errClosed, wantLog: "retry_in=10ms"},
		{name: "stopped", answers: []error{emfile}, stopped: true, want: errClosed},
		{name: "closed_by_someone_else", answers: nil, want: net.ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			lg := slog.New(slog.NewTextHandler(&log, nil))
			opened := 0
			open := func(nc net.Conn) bool {
				nc.Close()
				opened++
				return opened <= tt.opens
			}
			err := transport.Acceptor{Log: lg, Stopped: func() bool { return tt.stopped }, Open: open, Closed: errClosed}.Serve(&script{answers: tt.answers})
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
			if got := log.String(); tt.wantLog != "" && !strings.Contains(got, tt.wantLog) || tt.wantLog == "" && got != "" {
				t.Errorf("got log %q, want one with %q", got, tt.wantLog)
			}
		})
	}
}

func TestSleep(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	tests := []struct {
		name           string
		d              time.Duration
		done, deadline <-chan struct{}
		want           bool
	}{
		{"zero", 0, closed, nil, true},
		{"done", time.Hour, closed, nil, false},
		{"deadline", time.Hour, nil, closed, false},
		{"whole", time.Millisecond, nil, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := transport.Sleep(tt.d, tt.done, tt.deadline); got != tt.want {
				t.Errorf("Sleep(%v) = %v, want %v", tt.d, got, tt.want)
			}
		})
	}
}
