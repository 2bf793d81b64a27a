package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/trace"
)

// runOne runs c, bounded by timeout when it is positive. A scenario cut
// off by its timeout, not by the run being interrupted, FAILs with a why
// that names the timeout (scenario.TimeoutError); Run has stopped its
// servers by then.
func runOne(ctx context.Context, c scenario.Case, env scenario.Env, timeout time.Duration) (line report.Line, timedOut bool) {
	if timeout <= 0 {
		return c.Run(ctx, env), false
	}
	sctx, cancel := context.WithTimeoutCause(ctx, timeout, &scenario.TimeoutError{After: timeout, Bound: "--timeout"})
	defer cancel()
	line = c.Run(sctx, env)
	// Timed out only if the line says so: a scenario that finished just
	// as the bound passed keeps its verdict.
	_, cut := errors.AsType[*scenario.TimeoutError](context.Cause(sctx))
	return line, ctx.Err() == nil && cut && line.Verdict == report.Fail
}

// scenarioLogs returns the log files a scenario's servers write in dir,
// in the order they started (report.ServerLog).
func scenarioLogs(dir, name string) []string {
	if dir == "" {
		return nil
	}
	ents, _ := os.ReadDir(dir)
	byNumber := map[int]string{}
	for _, e := range ents {
		if n := report.ServerLogNumber(e.Name(), name); n > 0 {
			byNumber[n] = filepath.Join(dir, e.Name())
		}
	}
	var out []string
	for _, n := range slices.Sorted(maps.Keys(byNumber)) {
		out = append(out, byNumber[n])
	}
	return out
}

// logSizes records how long each of a scenario's logs and its trace are,
// so that -v prints only what this run of it appended.
func logSizes(dir, name string) map[string]int64 {
	m := map[string]int64{}
	for _, p := range append(scenarioLogs(dir, name), filepath.Join(dir, report.TraceLog(name))) {
		if fi, err := os.Stat(p); err == nil {
			m[p] = fi.Size()
		}
	}
	return m
}

// printVerbose writes, indented under a CASE line, the attempts its
// clients made (its trace) and the events its servers logged during it,
// the middle of a long list summarized (printCapped). keep says where
// the whole logs are, or how to keep them.
func printVerbose(w io.Writer, dir, name string, before map[string]int64, keep string) {
	tracePath := filepath.Join(dir, report.TraceLog(name))
	if fh, err := os.Open(tracePath); err == nil {
		fh.Seek(before[tracePath], io.SeekStart)
		recs, err := trace.Read(fh)
		fh.Close()
		if len(recs) > 0 || err != nil {
			fmt.Fprintf(w, "    %s:\n", report.TraceLog(name))
		}
		printCapped(w, len(recs), func(i int) string {
			r := recs[i]
			key := ""
			if r.Key != "" {
				key = " key=" + r.Key
			}
			return fmt.Sprintf("client %d call %d %s%s %v", r.Client, r.Call, r.Method, key, r)
		}, func(i int) string { return recs[i].Outcome.String() }, "attempt", keep)
		if err != nil {
			fmt.Fprintf(w, "      (%v)\n", err)
		}
	}
	for _, p := range scenarioLogs(dir, name) {
		fh, err := os.Open(p)
		if err != nil {
			continue
		}
		fh.Seek(before[p], io.SeekStart)
		evs, err := serverapi.ReadEvents(fh)
		fh.Close()
		fmt.Fprintf(w, "    %s:\n", filepath.Base(p))
		printCapped(w, len(evs), func(i int) string {
			return evs[i].Time.Format("15:04:05.000000") + " " + evs[i].String()
		}, func(i int) string { return evs[i].Name }, "event", keep)
		if err != nil {
			fmt.Fprintf(w, "      (%v)\n", err)
		}
	}
}

// verboseLines bounds the lines -v prints of one log: the first and last
// half of them, and between them a count per kind. A scenario such as
// hostile_connect_churn logs thousands of events.
const verboseLines = 60

// printCapped prints line(i) for i below n, indented, or when n exceeds
// verboseLines the first and last verboseLines/2 and, between them, how
// many of what (a noun, "event") of each kind were left out, and keep.
func printCapped(w io.Writer, n int, line, kind func(i int) string, what, keep string) {
	show := func(i int) { fmt.Fprintf(w, "      %s\n", line(i)) }
	if n <= verboseLines {
		for i := range n {
			show(i)
		}
		return
	}
	half := verboseLines / 2
	for i := range half {
		show(i)
	}
	counts := map[string]int{}
	var kinds []string
	for i := half; i < n-half; i++ {
		k := kind(i)
		if counts[k] == 0 {
			kinds = append(kinds, k)
		}
		counts[k]++
	}
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	fmt.Fprintf(w, "      … %s more: %s (%s)\n", plural(n-2*half, what), strings.Join(parts, ", "), keep)
	for i := n - half; i < n; i++ {
		show(i)
	}
}
