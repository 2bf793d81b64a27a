package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress is the live status line a batch keeps on a terminal's stderr:
// "[3/26] late_response_dropped_by_id 1.2s", redrawn every redraw while a
// scenario runs. Whatever else is written to that terminal goes through
// wrap, which erases the line first, so the line never ends up inside
// another. A nil *progress does nothing, and wrap returns w unchanged.
type progress struct {
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	mu sync.Mutex // guards the fields below and every write to w
	w  io.Writer
	// width is the terminal's: a longer line would wrap, and erasing
	// would take off its last row only.
	width int
	// shown: the line is on the screen and must be erased before
	// anything else is written.
	shown   bool
	i, n    int
	name    string
	started time.Time
}

// redraw is how often the elapsed time is brought up to date.
const redraw = 200 * time.Millisecond

// newProgress starts the status line on w, a terminal width columns
// wide, or returns nil when w is not a terminal a person reads.
func newProgress(w io.Writer, isTerminal bool, width int) *progress {
	if !isTerminal {
		return nil
	}
	return startProgress(w, redraw, width)
}

// startProgress starts a status line on w redrawn every interval.
func startProgress(w io.Writer, every time.Duration, width int) *progress {
	p := &progress{w: w, width: width, stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop(every)
	return p
}

func (p *progress) loop(every time.Duration) {
	defer close(p.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.draw()
		}
	}
}

// begin shows scenario i of n, name, starting now.
func (p *progress) begin(i, n int, name string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.i, p.n, p.name, p.started = i, n, name, time.Now()
	p.mu.Unlock()
	p.draw()
}

func (p *progress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.name == "" {
		return
	}
	line := []rune(fmt.Sprintf("[%d/%d] %s %.1fs", p.i, p.n, p.name, time.Since(p.started).Seconds()))
	if len(line) > p.width-1 {
		line = line[:max(p.width-1, 0)]
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", string(line))
	p.shown = true
}

// eraseLocked takes the line off the screen; p.mu is held.
func (p *progress) eraseLocked() {
	if p.shown {
		io.WriteString(p.w, "\r\x1b[K")
		p.shown = false
	}
}

// close erases the line and stops redrawing it. It may be called more
// than once.
func (p *progress) close() {
	if p == nil {
		return
	}
	p.stopOnce.Do(func() { close(p.stop) })
	<-p.done
	p.mu.Lock()
	p.eraseLocked()
	p.name = ""
	p.mu.Unlock()
}

// wrap returns a writer to w, which shares p's terminal, that erases the
// status line before each write; the next redraw puts it back.
func (p *progress) wrap(w io.Writer) io.Writer {
	if p == nil {
		return w
	}
	return progressWriter{p, w}
}

type progressWriter struct {
	p *progress
	w io.Writer
}

func (pw progressWriter) Write(b []byte) (int, error) {
	pw.p.mu.Lock()
	defer pw.p.mu.Unlock()
	pw.p.eraseLocked()
	return pw.w.Write(b)
}

// Fd is w's, so that report.UseColor still sees the terminal.
func (pw progressWriter) Fd() uintptr { return fdOf(pw.w) }
