package nethost

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// EnvRequire names the environment variable that, set to "1", makes a
// missing prerequisite a failure instead of a skip. CI sets it.
const EnvRequire = "RPCBENCH_REQUIRE_NETNS"

// ErrUnavailable is wrapped by Available's error: this process cannot
// make test hosts here.
var ErrUnavailable = errors.New("nethost: test hosts unavailable")

// Required reports whether RPCBENCH_REQUIRE_NETNS is "1": a run that
// needs test hosts and cannot have them must then fail, not skip.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// Available reports whether this process can make test hosts: it needs
// root (network namespaces and veth pairs need CAP_NET_ADMIN and
// CAP_SYS_ADMIN) and iproute2's ip and tc. Its error wraps
// ErrUnavailable and says how to get what is missing.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not running as root (network namespaces need root: run as root, e.g. sudo -E)", ErrUnavailable)
	}
	for _, bin := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%w: %s not found (install Debian's iproute2: apt-get install iproute2)", ErrUnavailable, bin)
		}
	}
	return nil
}
