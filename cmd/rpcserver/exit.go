package main

import (
	"errors"
	"flag"
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

// errUsage is wrapped by usage errors that have been printed.
var errUsage = errors.New("usage")

func exitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		return exitUsage
	}
	return exitFailed
}
