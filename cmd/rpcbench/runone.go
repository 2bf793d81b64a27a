package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/cases"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// errScenarioTimeout is the cause of a scenario's context ending at
// --timeout.
var errScenarioTimeout = errors.New("scenario timeout")

// runOne runs c, bounded by timeout when it is positive. A scenario cut
// off by its timeout, not by the run being interrupted, FAILs with a why
// that names the timeout; Run has stopped its servers by then.
func runOne(ctx context.Context, c cases.Case, env cases.Env, timeout time.Duration) (line report.Line, timedOut bool) {
	if timeout <= 0 {
		return c.Run(ctx, env), false
	}
	sctx, cancel := context.WithTimeoutCause(ctx, timeout, errScenarioTimeout)
	defer cancel()
	line = c.Run(sctx, env)
	if ctx.Err() != nil || !errors.Is(context.Cause(sctx), errScenarioTimeout) || line.Verdict != report.Interrupted {
		return line, false
	}
	line.Verdict = report.Fail
	why := fmt.Sprintf("timed out after %v (--timeout)", timeout)
	for i, f := range line.Fields {
		if f.Key == report.WhyKey {
			// What it had checked before the timeout, if anything.
			rest := strings.TrimPrefix(f.Value, "interrupted: "+errScenarioTimeout.Error())
			line.Fields[i].Value = why + strings.TrimPrefix(rest, ";")
			return line, true
		}
	}
	line.Fields = append(line.Fields, report.Field{Key: report.WhyKey, Value: why})
	return line, true
}

// scenarioLogs returns the log files a scenario's servers write in dir:
// server-NAME.log, server-NAME-2.log, ...
func scenarioLogs(dir, name string) []string {
	if dir == "" {
		return nil
	}
	out, _ := filepath.Glob(filepath.Join(dir, "server-"+name+".log"))
	more, _ := filepath.Glob(filepath.Join(dir, "server-"+name+"-*.log"))
	return append(out, more...)
}

// logSizes records how long each of a scenario's logs is, so that -v
// prints only what this run of it appended.
func logSizes(dir, name string) map[string]int64 {
	m := map[string]int64{}
	for _, p := range scenarioLogs(dir, name) {
		if fi, err := os.Stat(p); err == nil {
			m[p] = fi.Size()
		}
	}
	return m
}

// printVerbose writes, indented under a CASE line, its volatile fields
// that hold attempt logs and the events the scenario's servers logged
// during it, the middle of a long log summarized (printEvents). keep
// says where the whole logs are, or how to keep them.
func printVerbose(w io.Writer, line report.Line, dir, name string, before map[string]int64, keep string) {
	for _, f := range line.Fields {
		if f.Kind == report.Volatile && strings.Contains(f.Value, "class=") {
			fmt.Fprintf(w, "    %s:\n", f.Key)
			for i, a := range strings.Split(f.Value, ", a") {
				if i > 0 {
					a = "a" + a
				}
				fmt.Fprintf(w, "      %s\n", a)
			}
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
		printEvents(w, evs, keep)
		if err != nil {
			fmt.Fprintf(w, "      (%v)\n", err)
		}
	}
}

// verboseEvents bounds the events -v prints of one log: the first and
// last half of it, and between them a count per event name. A scenario
// such as hostile_connect_churn logs thousands.
const verboseEvents = 60

func printEvents(w io.Writer, evs []serverapi.Event, keep string) {
	line := func(e serverapi.Event) { fmt.Fprintf(w, "      %s %s\n", e.Time.Format("15:04:05.000000"), e) }
	if len(evs) <= verboseEvents {
		for _, e := range evs {
			line(e)
		}
		return
	}
	head, tail := evs[:verboseEvents/2], evs[len(evs)-verboseEvents/2:]
	for _, e := range head {
		line(e)
	}
	counts := map[string]int{}
	var names []string
	for _, e := range evs[len(head) : len(evs)-len(tail)] {
		if counts[e.Name] == 0 {
			names = append(names, e.Name)
		}
		counts[e.Name]++
	}
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%d %s", counts[n], n))
	}
	fmt.Fprintf(w, "      … %s more: %s (%s)\n", plural(len(evs)-len(head)-len(tail), "event"), strings.Join(parts, ", "), keep)
	for _, e := range tail {
		line(e)
	}
}
