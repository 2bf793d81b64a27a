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
package testexit
