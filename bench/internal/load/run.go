package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/leftover"
	"github.com/rpcbench/rpcbench/internal/serverproc"
)

// Run starts the servers the selected systems need, runs every row
// Options.Rounds times, interleaved (each round runs every G and, within
// it, every system in order), stops the servers and returns the report.
// A system whose store is PostgreSQL is left out, and listed in
// Report.Skipped, when there are no PostgreSQL binaries, unless
// pgcluster.Required. An error means the run could not start, or could
// not clean up after itself, in which case the report is returned too;
// calls that fail are counted in the report, not returned.
func Run(ctx context.Context, o Options) (rep *Report, err error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	keys, connsMemory := splitMeasurements(o.Systems)
	systems, err := selectSystems(keys)
	if err != nil {
		return nil, err
	}
	profiled := map[string]bool{}
	if o.CPUProfile != "" {
		ps, err := selectSystems(o.ProfileSystems)
		if err != nil {
			return nil, err
		}
		for _, s := range ps {
			profiled[s.Key] = true
		}
	}

	removed, err := leftover.Sweep("")
	leftover.Report(log, "rpcload", removed, err)
	dir, err := leftover.MkdirTemp("", "rpcload")
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	defer os.RemoveAll(dir)

	st := &stores{dir: dir, log: log}
	systems, skipped, err := st.startPostgres(ctx, systems)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := st.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("load: cleaning up: %w", cerr))
		}
	}()
	if len(systems) == 0 && len(skipped) > 0 {
		return nil, fmt.Errorf("load: no system left to run: %s left out: %s", skipped[0].System, skipped[0].Reason)
	}

	needRPC, needPeer := connsMemory, connsMemory
	maxConns := map[string]int{} // -max-conns of the rpcservers that hold idle connections
	for _, s := range systems {
		needRPC = needRPC || s.Store != ""
		needPeer = needPeer || s.Store == ""
		if s.Idle > 0 {
			maxConns[s.Server] = max(maxConns[s.Server], s.Idle+defaultMaxConns)
		}
	}
	bins, err := build(ctx, &o, needRPC, needPeer, dir, log)
	if err != nil {
		return nil, err
	}
	servers := map[string]*serverproc.Proc{}
	defer func() {
		for _, s := range servers {
			s.Stop()
		}
	}()
	fleets := map[string]*fleet{}
	defer func() {
		for _, f := range fleets {
			f.stop()
		}
	}()
	works := map[string]work{}
	for _, s := range systems {
		if servers[s.Server] != nil || fleets[s.Server] != nil {
			continue
		}
		if s.Fleet > 0 {
			f, err := startFleet(ctx, s.Fleet, s.Server, dir, fleetSpec(s, &o, bins, dir, log))
			if err != nil {
				return nil, err
			}
			fleets[s.Server] = f
			fmt.Fprintf(log, "%s: %d rpcservers listening on %s\n", s.Server, s.Fleet, strings.Join(f.addrs, " "))
			continue
		}
		store, err := st.spec(ctx, s.Store, s.Server)
		if err != nil {
			return nil, err
		}
		p, err := serverproc.StartAwait(ctx, serverSpec(s, store, maxConns[s.Server], &o, bins, dir, log), serverproc.StartTimeout)
		if err != nil {
			return nil, err
		}
		servers[s.Server] = p
		fmt.Fprintf(log, "%s listening on %s (pid %d)\n", s.Server, p.Addr, p.PID)
	}
	for _, s := range systems {
		works[s.Key] = newWork(s)
	}

	rep = &Report{Machine: ThisMachine(ctx), Settings: settingsOf(&o, systems), Skipped: skipped}
	start := time.Now()
	gs := rowGs(o.G, systems)
	for round := 1; round <= o.Rounds; round++ {
		for _, g := range gs {
			for _, sys := range systems {
				if !sys.runsAt(g, o.G) {
					continue
				}
				if err := ctx.Err(); err != nil {
					return nil, fmt.Errorf("load: run interrupted: %w", err)
				}
				r := row{
					sys:     sys,
					srv:     servers[sys.Server],
					fleet:   fleets[sys.Server],
					work:    works[sys.Key],
					g:       g,
					n:       max(1, o.N/sys.CallsDiv),
					warmup:  o.Warmup / sys.CallsDiv,
					round:   round,
					timeout: o.RowTimeout,
				}
				if profiled[sys.Key] {
					r.profile = fmt.Sprintf("%s.%s.g%d.r%d.pprof", o.CPUProfile, sys.Key, g, round)
				}
				s := measure(ctx, r)
				rep.Samples = append(rep.Samples, s)
				fmt.Fprintf(log, "round %d/%d G=%-3d %-23s %9.0f calls/s  p50 %7s  p99 %7s  non-OK %d%s%s%s\n",
					round, o.Rounds, g, sys.Name, s.CallsPerSec(), fmtDur(s.P50), fmtDur(s.P99), s.NonOK, restartSuffix(s), errSuffix(s.FirstError), execSuffix(s.ExecError))
			}
		}
	}
	rep.Wall = time.Since(start)
	rep.Rows = aggregate(systems, gs, rep.Samples)
	rep.Pairs = pairs(Targets(), systems, rep.Samples)
	if connsMemory {
		// The rows' servers are stopped first, so that they do not
		// share the machine's memory and file descriptors with this.
		for k, s := range servers {
			s.Stop()
			delete(servers, k)
		}
		cm, err := measureConnsMemory(ctx, &o, bins, dir, log)
		rep.ConnsMemory = cm
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// rowGs returns the concurrency levels of a run's rows, in table order:
// gs, then each systems' FixedG that gs lacks.
func rowGs(gs []int, systems []System) []int {
	out := slices.Clone(gs)
	for _, s := range systems {
		if s.FixedG > 0 && !slices.Contains(out, s.FixedG) {
			out = append(out, s.FixedG)
		}
	}
	return out
}

func restartSuffix(s Sample) string {
	if s.Restarts == 0 {
		return ""
	}
	return fmt.Sprintf("  restarts %d (%d drained clean)", s.Restarts, s.Drained)
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return " (first: " + e + ")"
}

func execSuffix(e string) string {
	if e == "" {
		return ""
	}
	return " (" + e + ")"
}

// aggregate reduces samples to one Row per system and G, in table order:
// by G, then by system. Within a G, each row's VsRPCBench and VsFloor
// are ratios to the Base and Floor rows of its shape, and a standard
// row's VsFloorGet to the FloorGet row.
func aggregate(systems []System, gs []int, samples []Sample) []Row {
	var rows []Row
	for _, g := range gs {
		base, floor := map[string]float64{}, map[string]float64{}
		floorGet := 0.0
		start := len(rows)
		shapes := map[string]string{} // row's system name to its shape
		for _, sys := range systems {
			var ss []Sample
			for _, s := range samples {
				if s.System == sys.Name && s.G == g {
					ss = append(ss, s)
				}
			}
			if len(ss) == 0 {
				continue
			}
			r := summarize(sys, g, ss)
			if sys.Base {
				base[sys.Shape] = r.CallsPerSec
			}
			if sys.Floor {
				floor[sys.Shape] = r.CallsPerSec
			}
			if sys.FloorGet {
				floorGet = r.CallsPerSec
			}
			shapes[sys.Name] = sys.Shape
			rows = append(rows, r)
		}
		for i := start; i < len(rows); i++ {
			shape := shapes[rows[i].System]
			if b := base[shape]; b > 0 {
				rows[i].VsRPCBench = rows[i].CallsPerSec / b
			}
			if f := floor[shape]; f > 0 {
				rows[i].VsFloor = rows[i].CallsPerSec / f
			}
			if shape == "" && floorGet > 0 {
				rows[i].VsFloorGet = rows[i].CallsPerSec / floorGet
			}
		}
	}
	return rows
}

// summarize takes the median of each figure over a row's rounds and adds
// up its calls and failures.
func summarize(sys System, g int, ss []Sample) Row {
	r := Row{System: sys.Name, Key: sys.Key, G: g, Rounds: len(ss), CallsPerRound: ss[0].Calls, ClientCPUOK: true, ServerCPUOK: true, Debits: sys.Debits}
	var cps, mbps, p50, p99, ccpu, scpu, allocs []float64
	for _, s := range ss {
		per100k := 1e5 / float64(max(s.Calls, 1))
		cps = append(cps, s.CallsPerSec())
		mbps = append(mbps, s.MBPerSec())
		p50 = append(p50, float64(s.P50.Nanoseconds())/1e3)
		p99 = append(p99, float64(s.P99.Nanoseconds())/1e3)
		ccpu = append(ccpu, s.ClientCPU.Seconds()*per100k)
		scpu = append(scpu, s.ServerCPU.Seconds()*per100k)
		allocs = append(allocs, float64(s.Mallocs)/float64(max(s.Calls, 1)))
		r.ClientCPUOK = r.ClientCPUOK && s.ClientCPUOK
		r.ServerCPUOK = r.ServerCPUOK && s.ServerCPUOK
		r.TotalCalls += s.Calls
		r.NonOK += s.NonOK
		r.Retried += s.Retried
		if r.FirstError == "" {
			r.FirstError = s.FirstError
		}
		r.Executed += s.Executed
		r.Restarts += s.Restarts
		r.Drained += s.Drained
		r.DrainedResent += s.DrainedResent
		if s.ExecError != "" {
			r.ExecErrors++
			if r.FirstExecError == "" {
				r.FirstExecError = s.ExecError
			}
		}
	}
	r.CallsPerSec = median(cps)
	r.MBPerSec = median(mbps)
	r.P50us, r.P99us = median(p50), median(p99)
	r.ClientCPUPer100k, r.ServerCPUPer100k = median(ccpu), median(scpu)
	r.AllocsPerCall = median(allocs)
	return r
}

func settingsOf(o *Options, systems []System) Settings {
	st := Settings{G: slices.Clone(o.G), N: o.N, Warmup: o.Warmup, Rounds: o.Rounds, Workers: o.Workers}
	for _, s := range systems {
		st.Systems = append(st.Systems, s.Key)
		if s.FixedG > 0 {
			st.Fixed = append(st.Fixed, Fixed{System: s.Name, G: s.FixedG})
		}
		if s.CallsDiv > 1 {
			st.Reduced = append(st.Reduced, Reduced{System: s.Name, Div: s.CallsDiv})
		}
	}
	return st
}
