package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/conform"
	"github.com/rpcbench/rpcbench/internal/report"
)

type conformOptions struct {
	*app
	// Addr is the server to check.
	Addr string
	// JUnit is the --junit file; "" writes none.
	JUnit string
	// Timeout bounds each check.
	Timeout time.Duration
	// Drain runs drain_finishes_taken last, stopping the server.
	Drain bool
}

func newConformCmd(a *app) *cobra.Command {
	o := &conformOptions{app: a, Timeout: conform.DefaultTimeout}
	cmd := &cobra.Command{
		Use:   "conform ADDR",
		Short: "Check a running server, whoever wrote it, against SPEC.md",
		Example: `  rpcbench conform 127.0.0.1:7070
  rpcbench conform server.internal:7070 --junit conform.xml`,
		Long: `Check the server listening at ADDR against internal/proto/SPEC.md, from the
outside: rpcbench does not start it, need not have written it, and connects
to ADDR only. The checks use the business methods get and debit and the
control method ctl.ping, on fresh accounts and idempotency keys named after a
random tag of the run, so the server's earlier state does not matter. They
leave those accounts debited.

First ctl.ping must be answered OK; otherwise no check runs, the exit
status is 2, and conform says what it saw instead: the connection refused,
accepted but no answer within --timeout, closed, an answer that looks like
HTTP, or other bytes (shown in hex and quoted). Then, one line per check,

  CHECK name PASS|FAIL detail

and "N passed, M failed". Every check is bounded by --timeout, so a server
that stops answering fails checks instead of hanging the run. The checks:

` + checkList() + `
--junit FILE also writes the results as JUnit XML: one testsuite "conform",
one testcase per check, a failed check's detail as its failure message;
--junit - writes it to stdout, and the CHECK lines to stderr.

Exit status: 0 every check passed, 1 a check failed, 2 usage error, ctl.ping
not answered OK or the JUnit file not writable, 130/143 interrupted.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf(cmd.UsageString(), "conform takes one argument, the address of the server to check (got %d)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Addr = args[0]
			return runConform(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.JUnit, "junit", "", `also write the results as JUnit XML to this file ("-": stdout, the CHECK lines then go to stderr)`)
	f.DurationVar(&o.Timeout, "timeout", o.Timeout, "bound on each check: dials, answers, waits for a close")
	f.BoolVar(&o.Drain, "drain", false, "run drain_finishes_taken last: it sends ctl.drain, which stops the server")
	return cmd
}

// checkList formats the checks for the help text: each name, then what
// it sends and expects, wrapped and indented.
func checkList() string {
	const indent, width = "      ", 78
	var b strings.Builder
	for _, c := range conform.Checks() {
		fmt.Fprintf(&b, "  %s\n", c.Name)
		line := indent
		for _, w := range strings.Fields(c.Doc) {
			if len(line) > len(indent) && len(line)+1+len(w) > width {
				b.WriteString(line + "\n")
				line = indent
			}
			if len(line) > len(indent) {
				line += " "
			}
			line += w
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// conformAddrHelp is printed below a malformed ADDR of conform.
const conformAddrHelp = "ADDR is host:port, such as 127.0.0.1:41234 or localhost:41234"

func runConform(ctx context.Context, o *conformOptions) error {
	// Checked as call checks its ADDR, so that a typing mistake is not
	// reported as a server that cannot be reached.
	list := strings.Split(o.Addr, ",")
	addrs, err := checkAddrs(list)
	switch {
	case err != nil:
		return &usageError{err: fmt.Errorf("ADDR %q: %w", o.Addr, err), choices: conformAddrHelp}
	case len(addrs) > 1:
		return &usageError{err: fmt.Errorf("ADDR %q: conform checks one server, not a list of %d", o.Addr, len(addrs)), choices: conformAddrHelp}
	}
	cfg := conform.DefaultConfig(addrs[0])
	cfg.Timeout = o.Timeout
	cfg.Slow = min(conform.DefaultSlow, cfg.Timeout/4)
	cfg.Drain = o.Drain
	if err := cfg.Validate(); err != nil {
		return usageErrorf("", "--timeout %v, ADDR %q: %v", o.Timeout, o.Addr, err)
	}
	// human receives the CHECK lines and the summary: stdout, or stderr
	// when the JUnit XML takes stdout.
	human := o.Out
	var junit *output
	if o.JUnit != "" {
		// Opened before the first check, so that an unwritable path is an
		// error up front rather than after the run.
		var err error
		if junit, err = openOutput("--junit", o.JUnit, o.Out); err != nil {
			return err
		}
		defer junit.abort()
		if junit.stdout() {
			human = o.Err
		}
	}
	verdict := report.VerdictPainter(human, o.Color)
	res, err := conform.Run(ctx, cfg, func(c conform.Check) {
		// Line starts "CHECK <name> <verdict>"; colour only the verdict.
		line, head := c.Line(), len("CHECK ")+len(c.Name)+1
		fmt.Fprintln(human, line[:head]+verdict(c.Verdict)+line[head+len(c.Verdict.String()):])
	})
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%w: %w", errInterrupted, context.Cause(ctx))
	case err != nil:
		// A *conform.PingError above all: no check ran.
		return err
	}
	fmt.Fprintln(human, res.Summary())
	fmt.Fprintf(o.Err, "conform: checked %s; the run's accounts and keys start with %s-\n", res.Addr, res.Tag)
	if junit != nil {
		if err := conform.WriteJUnit(junit.w, res); err != nil {
			return fmt.Errorf("--junit %s: %w", o.JUnit, err)
		}
		if err := junit.commit(); err != nil {
			return err
		}
		if !junit.stdout() {
			fmt.Fprintf(o.Err, "conform: wrote %s\n", o.JUnit)
		}
	}
	if res.Failed() > 0 {
		return errFailed
	}
	return nil
}
