package proxy

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/grpcwire"
	"github.com/rpcbench/rpcbench/internal/outcome"
	"github.com/rpcbench/rpcbench/internal/report"
	"github.com/rpcbench/rpcbench/internal/scenario"
	"github.com/rpcbench/rpcbench/internal/trace"
)

// CaseGroup is the group of the proxy's cases.
const CaseGroup = "proxy"

// CaseConfig is the configuration field of the proxy's lines: the calls
// were judged through the proxy.
const CaseConfig = "proxy"

// Cases turns judged calls into one case per invariant, for the
// evidence: its line counts the calls it judged and those that broke
// it, names the first, and is a FAIL when any did; N/A when no call
// could be judged by it. Each case's log lists every call and its
// attempts.
//
// problem, when set, is why the oracle's counts cannot be trusted (a
// move no attempt accounts for): the cases that need executions are an
// ERROR saying so.
func Cases(stack, oracle string, verdicts []Verdict, problem string) []scenario.Case {
	var out []scenario.Case
	for _, inv := range Invariants {
		name := "proxy_" + inv
		out = append(out, scenario.Case{
			Name: name, Group: CaseGroup, NoServer: true,
			Doc:    "each logical call through the proxy, judged by " + inv,
			Column: scenario.Column{Scenario: name, Stack: stack, Config: CaseConfig},
			Body: func(t *scenario.T) {
				t.Field("scenario", name)
				t.Field("stack", stack)
				t.Field("config", CaseConfig)
				judgeCase(t, inv, oracle, verdicts)
				if strings.HasPrefix(problem, "the record was full") || problem != "" && (inv == InvExecOnce || inv == InvOKExecuted) {
					t.Errored("%s", problem)
				}
			},
		})
	}
	return out
}

func judgeCase(t *scenario.T, inv, oracle string, verdicts []Verdict) {
	var judged, broken, unjudged, execs int
	var first, why string
	for _, v := range verdicts {
		if v.Executions < 0 || execs < 0 {
			execs = -1
		} else {
			execs += v.Executions
		}
		switch j := v.Of(inv); j.Outcome {
		case outcome.Holds:
			judged++
		case outcome.Violated:
			judged++
			broken++
			if first == "" {
				first = fmt.Sprintf("call %d (%s)", v.Call.ID, v.Call.Method)
				why = j.Why
			}
		default:
			unjudged++
			if why == "" && broken == 0 {
				why = j.Why
			}
		}
	}
	t.Field("calls", len(verdicts))
	if unjudged > 0 {
		t.Field("unjudged", unjudged)
	}
	if execs < 0 {
		t.Field("executions", "unknown")
	} else {
		t.Field("executions", execs)
	}
	t.Field("judged", judged)
	t.Field("broke", broken)
	if err := writeCalls(t, inv, oracle, verdicts); err != nil {
		t.Errored("%v", err)
	}
	o := outcome.Holds
	switch {
	case broken > 0:
		o = outcome.Violated
		t.Field("first", first+": "+why)
	case judged == 0:
		o = outcome.Unsupported
		if len(verdicts) == 0 {
			why = "no call came through the proxy"
		}
		t.NA = why
	}
	t.Fields = append(t.Fields, report.Field{Key: inv, Value: o.String(), Kind: report.Outcome})
	if o == outcome.Violated {
		t.Check(false, "%s violated by %d of %d calls judged; the first, %s: %s", inv, broken, judged, first, why)
	}
}

// writeCalls writes every call, its attempts and inv's outcome for it to
// the case's log.
func writeCalls(t *scenario.T, inv, oracle string, verdicts []Verdict) error {
	f, err := os.Create(filepath.Join(t.Env.LogDir, report.ProxyLog(t.Name)))
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "%s, judged per logical call; executions by the oracle: %s\n\n", inv, oracle)
	WriteCalls(f, verdicts, inv)
	fmt.Fprintln(f)
	WriteAttempts(f, verdicts)
	if err := f.Close(); err != nil {
		return err
	}
	// The attempts as the report page draws a client's: one lane per
	// client connection, each logical call's attempts in a row.
	tf, err := os.Create(filepath.Join(t.Env.LogDir, report.TraceLog(t.Name)))
	if err != nil {
		return err
	}
	if err := trace.Write(tf, Trace(verdicts)); err != nil {
		tf.Close()
		return err
	}
	return tf.Close()
}

// Trace is the calls' attempts as trace records, the client side of
// the proxy: a record's client is the attempt's connection, its call the
// logical call, its id the stream; its outcome what the client was sent,
// and its err what the upstream answered and how often the oracle saw
// it execute.
func Trace(verdicts []Verdict) []trace.Record {
	var out []trace.Record
	for _, v := range verdicts {
		for i, a := range v.Call.Attempts {
			r := trace.Record{Client: a.Conn, Call: v.Call.ID, Attempt: i + 1, Method: a.Method, Key: a.Key, ID: uint64(a.Stream),
				Start: a.Start.UTC(), End: a.Ended.UTC(), Addr: "proxy"}
			if r.End.Before(r.Start) {
				r.End = r.Start // never ended: the proxy closed first
			}
			if ms, err := grpcwire.ParseTimeout(a.Timeout); err == nil {
				r.BudgetMs = uint32(min(ms.Milliseconds(), 1<<31))
			}
			switch {
			case a.ClientReset != "":
				r.Outcome, r.Class = client.OutcomeCanceled, client.ClassUnknown
			case a.Client == "" || a.Client == "NO_STATUS":
				r.Outcome, r.Class = client.OutcomeAbandoned, client.ClassUnknown
			case strings.HasPrefix(a.Client, "RST_") || strings.HasPrefix(a.Client, "CONN_") || a.Client == "CUT_DATA" || strings.HasPrefix(a.Client, "GOAWAY"):
				r.Outcome, r.Class = client.OutcomeConnLost, client.ClassUnknown
				if !a.Forwarded {
					r.Class = client.ClassNotExecuted
				}
			case a.Client == "UNAVAILABLE":
				// What the client was told: not executed (the oracle may
				// say otherwise, in err).
				r.Outcome, r.Class, r.Status = client.OutcomeResponse, client.ClassNotExecuted, a.Client
			default:
				r.Outcome, r.Class, r.Status = client.OutcomeResponse, client.ClassFinal, a.Client
			}
			r.Err = fmt.Sprintf("client sent %s; upstream %s; executed %s", orDash(a.Client+resetText(a)), orDash(a.Upstream), Executed(a))
			if a.Rule != "" {
				r.Err += "; rule " + a.Rule
			}
			out = append(out, r)
		}
	}
	return out
}

// WriteCalls writes each call as a line of a table: its attempts, how
// many the upstream saw, how often it executed, what its client was
// told last, and inv's outcome for it ("" for every broken invariant).
func WriteCalls(w io.Writer, verdicts []Verdict, inv string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CALL\tMETHOD\tTIED BY\tATTEMPTS\tFORWARDED\tEXECUTIONS\tTOLD\tMS\tJUDGED")
	for _, v := range verdicts {
		execs := "unknown"
		if v.Executions >= 0 {
			execs = fmt.Sprint(v.Executions)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%s\t%d\t%s\n", v.Call.ID, v.Call.Method, v.Call.By, len(v.Call.Attempts), v.Forwarded, execs,
			v.Told, v.Elapsed.Milliseconds(), judgedText(v, inv))
	}
	tw.Flush()
}

// WriteAttempts writes every call's attempts as a table.
func WriteAttempts(w io.Writer, verdicts []Verdict) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CALL\tATTEMPT\tCONN\tSTREAM\tPREV\tTIMEOUT\tRULE\tUPSTREAM\tEXECUTED\tCLIENT\tSTART MS\tEND MS")
	for _, v := range verdicts {
		t0 := v.Call.Attempts[0].Start
		for i, a := range v.Call.Attempts {
			end := "-"
			if !a.Ended.IsZero() {
				end = fmt.Sprint(a.Ended.Sub(t0).Milliseconds())
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", v.Call.ID, i+1, a.Conn, a.Stream, orDash(a.Previous), orDash(a.Timeout),
				orDash(a.Rule), orDash(a.Upstream), Executed(a), orDash(a.Client+resetText(a)), a.Start.Sub(t0).Milliseconds(), end)
		}
	}
	tw.Flush()
}

// Executed says how often the oracle saw a executed: a count (with the
// late ones), "-" when it was never forwarded, "unknown" when no oracle
// judged it, or the oracle's error.
func Executed(a Attempt) string {
	switch {
	case a.Executions != nil && a.Late > 0:
		return fmt.Sprintf("%d (%d late)", *a.Executions, a.Late)
	case a.Executions != nil:
		return fmt.Sprint(*a.Executions)
	case a.OracleErr != "":
		return "error: " + a.OracleErr
	case a.Forwarded:
		return "unknown"
	}
	return "-"
}

func judgedText(v Verdict, inv string) string {
	if inv != "" {
		j := v.Of(inv)
		if j.Why != "" {
			return j.Outcome.String() + ": " + j.Why
		}
		return j.Outcome.String()
	}
	var broke []string
	for _, j := range v.Judged {
		if j.Outcome == outcome.Violated {
			broke = append(broke, j.Inv+": "+j.Why)
		}
	}
	if len(broke) == 0 {
		return "nothing broken"
	}
	return strings.Join(broke, "; ")
}

func resetText(a Attempt) string {
	if a.ClientReset != "" {
		return "(client reset " + a.ClientReset + ")"
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
