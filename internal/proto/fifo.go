package proto

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// FIFOClient pipelines requests on one connection and hands each response
// to the oldest request still waiting, without looking at IDs; a request
// that times out leaves the queue. It is wrong on purpose: the
// negative_control_fifo_crosstalk scenario uses it to show a late response
// reaching the wrong caller with no error signal. Do not use it otherwise.
type FIFOClient struct {
	nc     net.Conn
	nextID atomic.Uint64
	// Unmatched counts responses that arrived when no request was waiting.
	unmatched atomic.Int64

	mu    sync.Mutex // guards queue and the order of writes
	queue []*fifoWaiter

	readDone chan struct{}
}

type fifoWaiter struct {
	ch chan reply
}

// ErrFIFOTimeout is returned by FIFOClient.Do when no response reached the
// request in time.
var ErrFIFOTimeout = errors.New("proto: fifo call timed out")

// DialFIFO connects a FIFOClient to addr.
func DialFIFO(ctx context.Context, addr string) (*FIFOClient, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &FIFOClient{nc: nc, readDone: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

// Do sends one request and returns whichever response reaches the head of
// the queue while it is there.
func (c *FIFOClient) Do(ctx context.Context, method string, payload []byte, timeout time.Duration) (Frame, error) {
	w := &fifoWaiter{ch: make(chan reply, 1)}
	f := Frame{Type: TypeRequest, ID: c.nextID.Add(1), BudgetMs: deadlineMs(timeout), Method: method, Payload: payload}
	buf, err := AppendFrame(nil, &f)
	if err != nil {
		return Frame{}, err
	}
	c.mu.Lock()
	c.queue = append(c.queue, w)
	_, err = c.nc.Write(buf)
	c.mu.Unlock()
	if err != nil {
		return Frame{}, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-w.ch:
		return r.f, r.err
	case <-t.C:
	case <-ctx.Done():
	}
	c.mu.Lock()
	if i := slices.Index(c.queue, w); i >= 0 {
		c.queue = slices.Delete(c.queue, i, i+1)
		c.mu.Unlock()
		return Frame{}, ErrFIFOTimeout
	}
	c.mu.Unlock()
	r := <-w.ch
	return r.f, r.err
}

// Unmatched returns how many responses found no request waiting.
func (c *FIFOClient) Unmatched() int64 { return c.unmatched.Load() }

// Close closes the connection and waits for the reader to exit.
func (c *FIFOClient) Close() error {
	err := c.nc.Close()
	<-c.readDone
	return err
}

func (c *FIFOClient) readLoop() {
	defer close(c.readDone)
	var dec Decoder
	buf := make([]byte, readBufSize)
	for {
		n, err := c.nc.Read(buf)
		frames, derr := dec.Feed(buf[:n])
		for i := range frames {
			c.mu.Lock()
			if len(c.queue) == 0 {
				c.mu.Unlock()
				c.unmatched.Add(1)
				continue
			}
			w := c.queue[0]
			c.queue = c.queue[1:]
			c.mu.Unlock()
			w.ch <- reply{f: frames[i]}
		}
		if err == nil {
			err = derr
		}
		if err != nil {
			c.mu.Lock()
			q := c.queue
			c.queue = nil
			c.mu.Unlock()
			for _, w := range q {
				w.ch <- reply{err: err}
			}
			return
		}
	}
}
