package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Exit codes. exitCode is the only place that maps errors to them.
const (
	exitOK = 0
	// exitFailed: a scenario failed, or diff found a difference.
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

// printError writes err to w once, the way the user should see it.
func printError(w io.Writer, err error) {
	if err == nil || errors.Is(err, errFailed) {
		return
	}
	fmt.Fprintf(w, "rpcbench: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) && ue.choices != "" {
		fmt.Fprintln(w, ue.choices)
	}
}
