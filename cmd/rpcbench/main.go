// Command rpcbench runs the rpcbench scenarios against rpcserver processes,
// writes the evidence directory and compares runs. See root.go for the
// commands and exit.go for the exit codes.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/rpcbench/rpcbench/internal/fakestack"
)

func main() {
	// Started as one of the fake stacks the grpc group's negative
	// controls run in a stack's column, it is that fake and nothing else.
	if code, ok := fakestack.Main(); ok {
		os.Exit(code)
	}
	// The first SIGINT or SIGTERM cancels ctx with a *signalError as its
	// cause, which reaches Case.Run: the current scenario stops its
	// servers and the run ends, exiting 128+signal. Handling is then
	// restored to the default, so a second signal kills at once.
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s, ok := <-sigs
		if !ok {
			return
		}
		signal.Stop(sigs)
		fmt.Fprintln(os.Stderr, "rpcbench: interrupted; stopping once what runs has cleaned up (interrupt again to quit at once)")
		cancel(&signalError{s})
	}()
	// A write to a closed stdout must not kill the process before it has
	// stopped its servers and removed its temporary files: with SIGPIPE
	// notified (and the notifications dropped) the write fails with
	// EPIPE instead, and stdout's writer ends the run (closedPipe). A
	// handler, unlike SIG_IGN, is not inherited by rpcserver.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	go func() {
		for range pipes {
		}
	}()
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	signal.Stop(sigs)
	close(sigs)
	signal.Stop(pipes)
	close(pipes)
	cancel(nil)
	os.Exit(code)
}
