package transport

import (
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// Accept is a transport's accept loop: it accepts connections on ln and
// hands each to open, until open returns false or Accept fails once
// stopped reports true (Close, or a drain, closed ln); both end it with
// closed, the transport's ErrClosed. Any other failure (out of file
// descriptors, a connection reset before it was accepted) is no reason
// to stop serving: it is logged as ACCEPT_ERROR and Accept retried after
// a pause that doubles from 5ms to 1s, as net/http does, unless done
// closes first (closed again). A listener closed by someone else ends it
// with that error.
func Accept(ln net.Listener, lg *slog.Logger, done <-chan struct{}, stopped func() bool, open func(net.Conn) bool, closed error) error {
	var pause time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if stopped() {
				return closed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			lg.Warn(serverapi.EventAcceptError, serverapi.KeyErr, err.Error(), serverapi.KeyRetryIn, pause.String())
			if !Sleep(pause, done, nil) {
				return closed
			}
			continue
		}
		pause = 0
		if !open(nc) {
			return closed
		}
	}
}
