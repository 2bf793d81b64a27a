package evidence

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
)

// The negative controls' wrong clients live here, with the scenarios that
// use them, and nowhere in the client library.

// retryNaive is the retry rule of negative_control_naive_retry, plugged
// into client.Config.RetryUnknown: it re-sends every call whose outcome is
// unknown, whatever the call. It is wrong on purpose.
func retryNaive(*client.Call) bool { return true }

// fifoClient pipelines requests on one connection and hands each response
// to the oldest request still waiting, without looking at IDs; a request
// that times out leaves the queue. It is wrong on purpose:
// negative_control_fifo_crosstalk uses it to show a late response
// reaching the wrong caller with no error signal.
type fifoClient struct {
	nc     net.Conn
	nextID atomic.Uint64

	mu    sync.Mutex // guards queue and the order of writes
	queue []chan fifoReply

	readDone chan struct{}
}

type fifoReply struct {
	f   proto.Frame
	err error
}

// errFIFOTimeout is returned by fifoClient.do when no response reached the
// request in time.
var errFIFOTimeout = errors.New("cases: fifo call timed out")

// dialFIFO connects a fifoClient to addr.
func dialFIFO(ctx context.Context, addr string) (*fifoClient, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &fifoClient{nc: nc, readDone: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

// Do sends one request and returns whichever response reaches the head of
// the queue while it is there.
func (c *fifoClient) Do(ctx context.Context, method string, payload []byte, timeout time.Duration) (proto.Frame, error) {
	w := make(chan fifoReply, 1)
	f := proto.Frame{Type: proto.TypeRequest, ID: c.nextID.Add(1), BudgetMs: uint32(timeout.Milliseconds()), Method: method, Payload: payload}
	buf, err := proto.AppendFrame(nil, &f)
	if err != nil {
		return proto.Frame{}, err
	}
	c.mu.Lock()
	c.queue = append(c.queue, w)
	_, err = c.nc.Write(buf)
	c.mu.Unlock()
	if err != nil {
		return proto.Frame{}, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-w:
		return r.f, r.err
	case <-t.C:
	case <-ctx.Done():
	}
	c.mu.Lock()
	if i := slices.Index(c.queue, w); i >= 0 {
		c.queue = slices.Delete(c.queue, i, i+1)
		c.mu.Unlock()
		return proto.Frame{}, errFIFOTimeout
	}
	c.mu.Unlock()
	r := <-w
	return r.f, r.err
}

// Close closes the connection and waits for the reader to exit.
func (c *fifoClient) Close() error {
	err := c.nc.Close()
	<-c.readDone
	return err
}

func (c *fifoClient) readLoop() {
	defer close(c.readDone)
	fr := proto.NewFrameReader(c.nc, proto.TypeResponse, 0)
	for {
		f, err := fr.ReadFrame()
		c.mu.Lock()
		q := c.queue
		switch {
		case err != nil:
			c.queue = nil
		case len(q) > 0:
			c.queue, q = q[1:], q[:1]
		}
		c.mu.Unlock()
		for _, w := range q {
			w <- fifoReply{f: f, err: err}
		}
		if err != nil {
			return
		}
	}
}
