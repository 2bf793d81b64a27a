package load

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/bench/internal/workload"
	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/serverproc"
)

// ConnsMemory is what the conns-memory measurement found for one server:
// its resident memory with no client and with n idle ones.
type ConnsMemory struct {
	// Server is "rpcserver" or "raw-floor".
	Server string     `json:"server"`
	Points []MemPoint `json:"points"`
	// Skipped says, for each count of Options.MemoryConns not measured,
	// why (too few file descriptors).
	Skipped []string `json:"skipped,omitempty"`
}

// MemPoint is a server's RSS with Conns idle connections open.
type MemPoint struct {
	Conns  int   `json:"conns"`
	RSSKiB int64 `json:"rss_kib"`
	// PerConnKiB is (RSSKiB − the RSS at 0 connections) / Conns; 0 at 0.
	PerConnKiB float64 `json:"kib_per_conn"`
}

// connsTargetKiB is the memory per idle connection rpcserver aims for.
const connsTargetKiB = 16

// memorySettle is how long the measurement waits, once the connections
// are open and have made their call, before it reads the server's RSS.
const memorySettle = time.Second

// fdMargin is the file descriptors the measurement leaves spare, beyond
// the ones it knows of: the driver's own and a server's listener, logs
// and the like.
const fdMargin = 64

// memoryServer is one server the conns-memory measurement runs against.
type memoryServer struct {
	name string
	sys  System // what serverSpec starts
	dial func(ctx context.Context, addr string) (Client, error)
}

// measureConnsMemory runs the conns-memory measurement on a fresh
// rpcserver, then on a fresh raw-floor server.
func measureConnsMemory(ctx context.Context, o *Options, bins binaries, dir string, log io.Writer) ([]ConnsMemory, error) {
	servers := []memoryServer{
		{
			name: "rpcserver",
			sys:  System{Server: KeyConnsMemory, Store: bank.KindMemory},
			dial: func(ctx context.Context, addr string) (Client, error) { return dialRPCBench(false)(ctx, addr, 1) },
		},
		{
			name: "raw-floor",
			sys:  System{Server: serverRaw},
			dial: func(ctx context.Context, addr string) (Client, error) { return dialRaw(ctx, addr, 1) },
		},
	}
	var out []ConnsMemory
	for _, ms := range servers {
		cm, err := connsMemory(ctx, o, ms, bins, dir, log)
		if err != nil {
			return out, err
		}
		out = append(out, cm)
	}
	return out, nil
}

// connsMemory measures one server, in a process of its own started for
// it: its RSS once one client has connected, made a call and left (so
// that the code and buffers the first call pages in are not charged to
// the connections), then with each count of o.MemoryConns of clients
// connected, each having made one get, idle since.
func connsMemory(ctx context.Context, o *Options, ms memoryServer, bins binaries, dir string, log io.Writer) (ConnsMemory, error) {
	cm := ConnsMemory{Server: ms.name}
	most := o.MemoryConns[len(o.MemoryConns)-1]
	maxConns := 0
	if ms.sys.Store != "" {
		maxConns = most + defaultMaxConns
	}
	spec := serverSpec(ms.sys, "", maxConns, o, bins, dir, log)
	p, err := serverproc.StartAwait(ctx, spec, serverproc.StartTimeout)
	if err != nil {
		return cm, err
	}
	defer p.Stop()
	fmt.Fprintf(log, "conns-memory: %s listening on %s (pid %d)\n", ms.name, p.Addr, p.PID)

	w := getWork{reqs: workload.Requests()}
	dial := func(ctx context.Context) (Client, error) { return ms.dial(ctx, p.Addr) }
	first, err := holdConns(ctx, 1, dial, w)
	first.close()
	if err != nil {
		return cm, fmt.Errorf("load: conns-memory %s: %w", ms.name, err)
	}
	rss0, err := settledRSS(ctx, p)
	if err != nil {
		return cm, err
	}
	cm.Points = append(cm.Points, MemPoint{RSSKiB: rss0})
	fmt.Fprintf(log, "conns-memory: %s RSS %d KiB with 0 connections\n", ms.name, rss0)

	var held heldConns
	defer func() { held.close() }()
	for _, n := range o.MemoryConns {
		if reason := fdShortage(n, p.PID); reason != "" {
			cm.Skipped = append(cm.Skipped, fmt.Sprintf("%d connections: %s", n, reason))
			fmt.Fprintf(log, "conns-memory: %s: %d connections skipped: %s\n", ms.name, n, reason)
			continue
		}
		more, err := holdConns(ctx, n-len(held), dial, w)
		held = append(held, more...)
		if err != nil {
			return cm, fmt.Errorf("load: conns-memory %s: %w", ms.name, err)
		}
		rss, err := settledRSS(ctx, p)
		if err != nil {
			return cm, err
		}
		pt := MemPoint{Conns: n, RSSKiB: rss, PerConnKiB: float64(rss-rss0) / float64(n)}
		cm.Points = append(cm.Points, pt)
		fmt.Fprintf(log, "conns-memory: %s RSS %d KiB with %d connections, %.1f KiB each\n", ms.name, rss, n, pt.PerConnKiB)
	}
	return cm, nil
}

// settledRSS waits memorySettle, then reads the server's RSS.
func settledRSS(ctx context.Context, p *serverproc.Proc) (int64, error) {
	t := time.NewTimer(memorySettle)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if err := p.Alive(); err != nil {
		return 0, err
	}
	return procRSS(p.PID)
}

// fdShortage says why n connections cannot be open at once, the driver
// holding one end of each and the server pid the other, or returns ""
// when they can. The driver's soft limit is raised as far as its hard
// limit allows.
func fdShortage(n, pid int) string {
	open, err := openFiles()
	if err != nil {
		return err.Error()
	}
	want := uint64(n + open + fdMargin)
	have, err := raiseNoFile(want)
	if err != nil {
		return err.Error()
	}
	if have < want {
		return fmt.Sprintf("the driver's RLIMIT_NOFILE is %d, and %d connections need %d", have, n, want)
	}
	srv, err := procMaxFiles(pid)
	if err != nil {
		return err.Error()
	}
	if srv >= 0 && srv < int64(n+fdMargin) {
		return fmt.Sprintf("the server's RLIMIT_NOFILE is %d, and %d connections need %d", srv, n, n+fdMargin)
	}
	return ""
}

// writeConnsMemory writes the conns-memory table and its notes.
func writeConnsMemory(b *strings.Builder, cms []ConnsMemory) {
	b.WriteString("Memory per idle connection (conns-memory): each server in a fresh process of its own. " +
		"RSS is VmRSS from /proc/PID/status, read " + memorySettle.String() + " after the last connection's call; " +
		"at 0 connections, after one client connected, made one get and left, so that what the first call pages in " +
		"is not charged to the connections. At n, n clients are connected, each having made one get, idle since. " +
		"KiB per connection = (RSS_n − RSS_0) / n.\n\n")
	b.WriteString("| server | idle connections | RSS KiB | KiB per connection |\n")
	b.WriteString("|---|---:|---:|---:|\n")
	for _, cm := range cms {
		for _, pt := range cm.Points {
			per := "—"
			if pt.Conns > 0 {
				per = fmt.Sprintf("%.1f", pt.PerConnKiB)
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", cm.Server, thousands(float64(pt.Conns)), thousands(float64(pt.RSSKiB)), per)
		}
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "- rpcserver's target: ≤ %d KiB per idle connection.\n", connsTargetKiB)
	b.WriteString("- The driver's clients are rpcbench's `client.New` (one connection each) for rpcserver and rawwire clients for raw-floor.\n")
	for _, cm := range cms {
		for _, s := range cm.Skipped {
			fmt.Fprintf(b, "- %s: %s, skipped.\n", cm.Server, s)
		}
	}
	b.WriteString("\n")
}
