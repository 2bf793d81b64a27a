package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/rpcbench/rpcbench/internal/report"
)

// Exit codes. exitCode is the only place that maps errors to them.
const (
	exitOK = 0
	// exitFailed: a scenario failed or ended in ERROR, or diff found a
	// difference.
	exitFailed = 1
	// exitError: a usage error (bad flag, argument, command, group or
	// scenario name), or the command could not do its work at all
	// (rpcserver missing, an unreadable or unwritable file).
	exitError = 2
	// exitInterrupted: a signal stopped the run; 128+SIGINT. A run stopped
	// by another signal exits 128 plus its number (143 for SIGTERM).
	exitInterrupted = 130
	// exitUnknown: rpcbench call ended with its outcome unknown (the
	// request may or may not have executed).
	exitUnknown = 3
)

// exitCodes is the one table of exit codes: root's --help prints it, and
// the README's table is checked against it (TestReadmeExitCodes).
var exitCodes = []struct {
	Code    string
	Meaning string
}{
	{strconv.Itoa(exitOK), "nothing failed or ended in ERROR (findings, n/a and skips allowed), or diff found no differences"},
	{strconv.Itoa(exitFailed), "a scenario or check failed or ended in ERROR (something it drives, such as a client adapter, broke its contract), or diff found differences"},
	{strconv.Itoa(exitError), "usage error (a bad flag, argument, command, group or scenario name), or the command could not start its work: rpcserver missing, an output path that cannot be written, no usable temporary directory, an evidence directory another run holds, an input diff or report cannot read"},
	{strconv.Itoa(exitUnknown), "`rpcbench call` ended with its outcome unknown: the request may or may not have executed"},
	{strconv.Itoa(exitInterrupted), "interrupted by SIGINT; 128 plus the signal for another: 143 for SIGTERM, 141 when stdout's reader went away (SIGPIPE)"},
}

// exitCodeTable renders exitCodes as a Markdown table.
func exitCodeTable() string {
	var b strings.Builder
	b.WriteString("| exit code | meaning |\n|---|---|\n")
	for _, c := range exitCodes {
		fmt.Fprintf(&b, "| %s | %s |\n", c.Code, c.Meaning)
	}
	return b.String()
}

// exitCodeHelp renders exitCodes for --help, wrapped to 80 columns.
func exitCodeHelp() string {
	var b strings.Builder
	b.WriteString("Exit status:")
	for _, c := range exitCodes {
		fmt.Fprintf(&b, "\n  %-4s", c.Code)
		col := 7
		for _, w := range strings.Fields(strings.ReplaceAll(c.Meaning, "`", "'")) {
			if col+1+len(w) > 80 {
				b.WriteString("\n       ")
				col = 7
			}
			b.WriteString(" " + w)
			col += 1 + len(w)
		}
	}
	return b.String()
}

// errFailed reports that a scenario failed or that diff found a
// difference. The command's output already says which, so it is not
// printed again.
var errFailed = errors.New("rpcbench: failed")

// signalError is the cause of a run stopped by a signal.
type signalError struct{ sig os.Signal }

func (e *signalError) Error() string { return e.sig.String() + " received" }

// errInterrupted is wrapped by the error of a run that a signal stopped.
var errInterrupted = errors.New("interrupted")

// usageError is a mistake in the command line. It is printed with the
// valid choices, or the command's usage, below it.
type usageError struct {
	err     error
	choices string
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(choices, format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...), choices: choices}
}

func exitCode(err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errInterrupted):
		var se *signalError
		if errors.As(err, &se) {
			if n, ok := se.sig.(syscall.Signal); ok {
				return 128 + int(n)
			}
		}
		return exitInterrupted
	case errors.Is(err, errUnknownOutcome):
		return exitUnknown
	case errors.Is(err, errFailed):
		return exitFailed
	default:
		return exitError
	}
}

// printError writes err to w once, the way the user should see it. A
// command ended because stdout's reader went away prints nothing, as a
// process SIGPIPE killed would not.
func printError(w io.Writer, err error) {
	var se *signalError
	var ae *errAdapter
	if errors.As(err, &ae) {
		// A failure no CASE line has told of: the adapter judge was
		// given broke before any scenario.
		fmt.Fprintf(w, "rpcbench: %v\n", err)
		return
	}
	if err == nil || errors.Is(err, errFailed) || errors.As(err, &se) && se.sig == syscall.SIGPIPE {
		return
	}
	fmt.Fprintf(w, "rpcbench: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) && ue.choices != "" {
		fmt.Fprintln(w, ue.choices)
	}
}

// setupError is an error that kept a command from starting, said the way
// a user needs it: what failed and what to do, without the inner
// package's wording. It wraps the error it explains.
type setupError struct {
	msg string
	err error
}

func (e *setupError) Error() string { return e.msg }
func (e *setupError) Unwrap() error { return e.err }

// evidenceError explains why the evidence directory dir cannot be
// written.
func evidenceError(dir string, err error) error {
	const hint = `name another with --evidence DIR, or --evidence "" to write none`
	var pe *fs.PathError
	switch {
	case errors.Is(err, report.ErrLocked):
		return &setupError{fmt.Sprintf("evidence directory %s is in use by another run; wait for it to finish, or %s", dir, hint), err}
	case errors.As(err, &pe):
		return &setupError{fmt.Sprintf("evidence directory %s cannot be written (%s %s: %v); %s", dir, pe.Op, pe.Path, pe.Err, hint), err}
	}
	return &setupError{fmt.Sprintf("evidence directory %s: %v; %s", dir, err, hint), err}
}
