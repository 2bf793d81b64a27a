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
)

func main() {
	// The first SIGINT or SIGTERM cancels ctx, which reaches Case.Run: the
	// current scenario stops its servers and the run ends. stop restores
	// the default handling, so a second signal kills at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	notice := context.AfterFunc(ctx, func() {
		stop()
		fmt.Fprintln(os.Stderr, "rpcbench: interrupted; stopping once the current scenario has cleaned up (interrupt again to quit at once)")
	})
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	notice()
	stop()
	os.Exit(code)
}
