package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/serverproc"
)

// Shape of the rolling rows.
const (
	// rollingServers is how many rpcservers the rolling rows' client
	// balances over.
	rollingServers = 3
	// rollingDrainTimeout is each server's -drain-timeout, rpcserver's
	// default made explicit: the bound on a drain the roller waits for.
	rollingDrainTimeout = 5 * time.Second
	// rollingExitTimeout bounds how long a server may take to exit after
	// SIGTERM: its drain, and margin on a loaded machine.
	rollingExitTimeout = rollingDrainTimeout + 10*time.Second
	// rollingGap is the pause between a restarted server's announcement
	// and the next server's SIGTERM: a deploy's pacing, not a wait for
	// anything.
	rollingGap = 200 * time.Millisecond
	// rollingBatch divides a row's N into the extra calls the measured
	// phase of rolling-restart makes, batch after batch, until every
	// server has been restarted once.
	rollingBatch = 10
)

// fleet is the rpcservers of the rolling rows, each on an address of its
// own that it keeps across restarts. Each process of address i, life l
// (from 1), is named "rolling-i.l" for its log and CPU profile.
type fleet struct {
	// ctx is the run's: every process lives under it, the restarted
	// ones too.
	ctx   context.Context
	name  string
	dir   string
	spec  func(name, addr string) serverproc.Spec
	addrs []string // fixed once started

	// mu guards procs and lives, which restart changes.
	mu    sync.Mutex
	procs []*serverproc.Proc // the running process of each address
	lives []int              // how many processes each address has had
}

// startFleet starts n rpcservers on fresh addresses, each started by
// spec(name, ""). On error the ones started are stopped.
func startFleet(ctx context.Context, n int, name, dir string, spec func(name, addr string) serverproc.Spec) (*fleet, error) {
	f := &fleet{ctx: ctx, name: name, dir: dir, spec: spec}
	for i := range n {
		p, err := serverproc.StartAwait(ctx, spec(f.procName(i, 1), ""), serverproc.StartTimeout)
		if err != nil {
			f.stop()
			return nil, err
		}
		f.procs = append(f.procs, p)
		f.lives = append(f.lives, 1)
		f.addrs = append(f.addrs, p.Addr)
	}
	return f, nil
}

func (f *fleet) procName(i, life int) string { return fmt.Sprintf("%s-%d.%d", f.name, i+1, life) }

// stop stops every running process.
func (f *fleet) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.procs {
		p.Stop()
	}
}

// alive returns an error if any server has exited.
func (f *fleet) alive() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, p := range f.procs {
		errs = append(errs, p.Alive())
	}
	return errors.Join(errs...)
}

// cpu returns the CPU the running servers have used, summed.
func (f *fleet) cpu() (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var sum time.Duration
	for _, p := range f.procs {
		d, err := procCPU(p.PID)
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// restart drains server i by SIGTERM, waits for it to exit, and starts
// it again on its address, returning once the new process has announced
// that it listens. drained reports whether the old process drained
// clean by its own account: it exited with status 0 and its log's
// DRAIN_DONE counts no connection left open. An error means the server
// could not be restarted: it did not exit in time (it is then killed) or
// the new one did not start, and the address is left without a server.
func (f *fleet) restart(i int) (drained bool, err error) {
	f.mu.Lock()
	p, life := f.procs[i], f.lives[i]
	f.mu.Unlock()
	name := f.procName(i, life)
	if err := p.Terminate(); err != nil {
		return false, fmt.Errorf("load: restarting %s: %w", name, err)
	}
	t := time.NewTimer(rollingExitTimeout)
	defer t.Stop()
	select {
	case <-p.Exited():
	case <-t.C:
		p.Stop()
		return false, fmt.Errorf("load: restarting %s (pid %d): not gone %v after SIGTERM", name, p.PID, rollingExitTimeout)
	case <-f.ctx.Done():
		return false, fmt.Errorf("load: restarting %s: %w", name, f.ctx.Err())
	}
	p.Stop() // it has exited: this only releases its context
	drained = p.ExitErr() == nil && drainedClean(serverLog(f.dir, name))

	np, err := serverproc.StartAwait(f.ctx, f.spec(f.procName(i, life+1), f.addrs[i]), serverproc.StartTimeout)
	if err != nil {
		return drained, fmt.Errorf("load: restarting %s on %s: %w", name, f.addrs[i], err)
	}
	f.mu.Lock()
	f.procs[i], f.lives[i] = np, life+1
	f.mu.Unlock()
	return drained, nil
}

// drainedClean reports whether the rpcserver log at path records a drain
// that ended with no connection open: every connection closed after the
// server had answered what it took, none cut at the drain timeout.
func drainedClean(path string) bool {
	b, err := os.Open(path)
	if err != nil {
		return false
	}
	defer b.Close()
	events, err := serverapi.ReadEvents(b)
	if err != nil {
		return false
	}
	for _, e := range events {
		if e.Name == serverapi.EventDrainDone {
			open, ok := e.Int(serverapi.KeyOpen)
			return ok && open == 0
		}
	}
	return false
}

// roller restarts a fleet's servers in turn, the first first, for as
// long as a measured phase runs: each drained, restarted on its address,
// then rollingGap, then the next, round after round.
type roller struct {
	stop  chan struct{} // closed by finish
	round chan struct{} // closed once every server was restarted once, or the roller ended early
	done  chan struct{} // closed when the roller has ended

	// Set before done is closed: the restarts made, how many of them
	// drained clean (fleet.restart), and why the roller ended early.
	restarts, drained int
	err               error
}

// roll starts a roller of f. It stops once finish is called and every
// server has been restarted at least once, or when ctx ends or a restart
// fails.
func (f *fleet) roll(ctx context.Context) *roller {
	r := &roller{stop: make(chan struct{}), round: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		roundClosed := false
		defer func() {
			if !roundClosed {
				close(r.round)
			}
		}()
		n := len(f.addrs)
		for k := 0; ; k++ {
			drained, err := f.restart(k % n)
			if err != nil {
				r.err = err
				return
			}
			r.restarts++
			if drained {
				r.drained++
			}
			if k+1 == n {
				close(r.round)
				roundClosed = true
			}
			gap := time.NewTimer(rollingGap)
			select {
			case <-gap.C:
			case <-ctx.Done():
				gap.Stop()
				return
			case <-r.stop:
				gap.Stop()
			}
			if roundClosed && isClosed(r.stop) {
				return
			}
		}
	}()
	return r
}

// rounded reports whether every server has been restarted once, or the
// roller ended early.
func (r *roller) rounded() bool { return isClosed(r.round) }

// finish stops the roller, waits for the restart under way to end, and
// returns its counts.
func (r *roller) finish() (restarts, drained int, err error) {
	close(r.stop)
	<-r.done
	return r.restarts, r.drained, r.err
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// fleetSpec returns the spec function of the fleet of sys.
func fleetSpec(sys System, o *Options, bins binaries, dir string, stderr io.Writer) func(name, addr string) serverproc.Spec {
	return func(name, addr string) serverproc.Spec {
		return rpcServerSpec(rpcServerProc{sys: sys, name: name, addr: addr, drainTimeout: rollingDrainTimeout}, o, bins, dir, stderr)
	}
}
