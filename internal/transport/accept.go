package transport

import (
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// Acceptor is a transport's accept loop and what it needs of the
// transport.
type Acceptor struct {
	// Log gets ACCEPT_ERROR.
	Log *slog.Logger
	// Done closes when the transport closes: a pause between retries
	// ends with it.
	Done <-chan struct{}
	// Stopped reports whether the transport closed its listener itself
	// (Close, or a drain).
	Stopped func() bool
	// Open takes one accepted connection; false ends the loop.
	Open func(net.Conn) bool
	// Closed is the transport's ErrClosed, which ends a loop the
	// transport stopped.
	Closed error
}

// Serve accepts connections on ln and hands each to Open, until Open
// returns false or Accept fails once Stopped reports true; both end it
// with Closed. Any other failure (out of file descriptors, a connection
// reset before it was accepted) is no reason to stop serving: it is
// logged as ACCEPT_ERROR and Accept retried after a pause that doubles
// from 5ms to 1s, as net/http does, unless Done closes first (Closed
// again). A listener closed by someone else ends it with that error.
func (a Acceptor) Serve(ln net.Listener) error {
	var pause time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if a.Stopped() {
				return a.Closed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			a.Log.Warn(serverapi.EventAcceptError, serverapi.KeyErr, err.Error(), serverapi.KeyRetryIn, pause.String())
			if !Sleep(pause, a.Done, nil) {
				return a.Closed
			}
			continue
		}
		pause = 0
		if !a.Open(nc) {
			return a.Closed
		}
	}
}
