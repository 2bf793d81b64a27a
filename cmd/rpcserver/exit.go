package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Exit codes. exitCode is the only place that maps errors to them.
const (
	exitOK = 0
	// exitFailed: the log file could not be opened, the address could not
	// be bound, or serving failed.
	exitFailed = 1
	// exitUsage: an unknown flag, a bad fault, a stray argument or an
	// invalid configuration.
	exitUsage = 2
)

// usageError is an error in the command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// usageHint follows a usage error, which is printed alone: the whole -h
// text would bury it, and a program that started rpcserver quotes the
// end of its stderr.
const usageHint = "rpcserver: run rpcserver -h for the flags and the fault rules"

func exitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, new(usageError)):
		return exitUsage
	}
	return exitFailed
}

// report prints err, if it is one, once.
func report(stderr io.Writer, err error) {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return
	}
	fmt.Fprintf(stderr, "rpcserver: %v\n", err)
	if errors.As(err, new(usageError)) {
		fmt.Fprintln(stderr, usageHint)
	}
}
