// Package testexit ends a test binary as os.Exit does, but, under the
// race detector, without its pause at exit.
//
// The race runtime sleeps a second as a process exits (GORACE's
// atexit_sleep_ms, 1000 by default), so that goroutines still running
// can report a race. In a test binary every test has already been
// checked for races by then (testing fails a test during which one was
// reported), so that second is waste, and go test -race ./... spends it
// once per package. A TestMain ends with Exit(m.Run()) instead of
// os.Exit, or hands Exit to goleak.VerifyTestMain with goleak.Cleanup.
//
// What that costs: a race reported after m.Run has returned (by a
// goroutine that outlived its test, or in TestMain's own teardown) is
// still printed, but no longer turns the binary's exit status to 66.
// The packages whose tests start goroutines that could outlive them
// check for leaks with goleak, which fails the run on its own.
package testexit
