package transport

import (
	"net"
	"time"
)

// TCPTuning is what TuneTCP sets on an accepted TCP connection: the
// keepalive that finds a peer gone while the connection idles, and the
// TCP_USER_TIMEOUT that bounds how long sent bytes, or keepalive probes,
// may go unanswered.
type TCPTuning struct {
	// KeepAlive says probes are sent at all; the fields below it are
	// zero when not.
	KeepAlive bool
	// Idle is the silence before the first probe, and Interval the pause
	// between probes while one is unanswered, both in whole seconds as
	// the kernel takes them.
	Idle, Interval time.Duration
	// Probes is how many probes go unanswered before the peer is
	// declared dead (TCP_KEEPCNT; on Linux UserTimeout is set so that the
	// kernel gives up at the same probe).
	Probes int
	// UserTimeout is the socket's TCP_USER_TIMEOUT (Linux only): sent
	// bytes unacknowledged for that long abort the connection, and so
	// does a keepalive probe still unanswered once that long has passed
	// since the peer was last heard from.
	UserTimeout time.Duration
}

// keepAliveProbes is TCPTuning.Probes: a healthy peer whose answers to
// two probes in a row are lost (a burst of probes from many idle
// connections overflowing a receive queue) is kept.
const keepAliveProbes = 3

// PlanTCP decides the tuning of a connection for a keepalive idle time
// and a write timeout (0 keepAlive: no keepalive).
//
// Linux's keepalive timer, once TCP_USER_TIMEOUT is set, ignores
// TCP_KEEPCNT: each time it fires with a probe unanswered it aborts the
// connection if the peer has been silent for the user timeout. An
// answered probe resets the count and the silence, so a healthy peer is
// only at risk when probes or their answers are lost: with the silence
// measured from the last answer, the timer fires at Idle, Idle+Interval,
// Idle+2*Interval, ... and aborts at the first of those, after the
// first, that reaches the user timeout. A user timeout no longer than
// Idle (WriteTimeout 10s under Go's 15s keepalive) therefore aborts a
// connection for a single lost probe. So the interval is half the write
// timeout, in whole seconds, within [1s, Idle], and the user timeout is
// raised, when the write timeout is shorter, to half an interval past
// Idle+(Probes-1)*Interval: the kernel sends Probes probes and aborts at
// Idle+Probes*Interval of silence, as TCP_KEEPCNT would. The write
// timeout still bounds each write the server makes (a write deadline);
// only the kernel's bound on unacknowledged bytes grows with it.
func PlanTCP(keepAlive, writeTimeout time.Duration) TCPTuning {
	if keepAlive <= 0 {
		return TCPTuning{UserTimeout: writeTimeout}
	}
	idle := (keepAlive + time.Second - 1) / time.Second * time.Second
	interval := min(max(writeTimeout/2/time.Second*time.Second, time.Second), idle)
	reach := idle + (keepAliveProbes-1)*interval + interval/2
	return TCPTuning{
		KeepAlive:   true,
		Idle:        idle,
		Interval:    interval,
		Probes:      keepAliveProbes,
		UserTimeout: max(writeTimeout, reach),
	}
}

// TuneTCP applies PlanTCP(keepAlive, writeTimeout) to nc, if it is a
// *net.TCPConn; it does nothing to any other connection.
func TuneTCP(nc net.Conn, keepAlive, writeTimeout time.Duration) error {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	p := PlanTCP(keepAlive, writeTimeout)
	if err := tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: p.KeepAlive, Idle: p.Idle, Interval: p.Interval, Count: p.Probes}); err != nil {
		return err
	}
	return setUserTimeout(tc, p.UserTimeout)
}
