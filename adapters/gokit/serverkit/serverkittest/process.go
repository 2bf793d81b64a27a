package serverkittest

import (
	"os"
	"os/exec"
	"testing"
)

// envServeMain set to "1" makes a test binary whose TestMain calls Main
// run the adapter's main in serve mode instead of its tests.
const envServeMain = "RPCBENCH_TEST_SERVE_MAIN"

// Main is what an adapter package's TestMain returns to os.Exit: in a
// test binary Self started it runs main as "ADAPTER serve", which
// exits; otherwise the tests.
func Main(m *testing.M, main func()) int {
	if os.Getenv(envServeMain) == "1" {
		os.Args = []string{os.Args[0], "serve"}
		main()
	}
	return m.Run()
}

// Self is the test binary itself as the adapter in serve mode, for
// ProcessSuite; the package's TestMain must call Main.
func Self(t *testing.T) *exec.Cmd {
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envServeMain+"=1")
	return cmd
}
