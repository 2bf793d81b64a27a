package evidence

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

func comparePerRequestVsMultiplex(t *scenario.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("needs Linux: it counts TIME_WAIT sockets in /proc/net/tcp")
	}
	s := t.StartServer(scenario.ServerOpts{})
	_, portText, err := net.SplitHostPort(s.Addr)
	if err != nil {
		t.Fatalf("server address %q: %v", s.Addr, err)
	}
	port, _ := strconv.ParseUint(portText, 10, 16)

	twBefore, twErr := timeWait(uint16(port))
	cfg := client.DefaultConfig()
	cfg.ConnPerCall = true
	per := t.Client(s.Addr, cfg)
	pr := runLoad(t, per, false)
	twAfter, _ := timeWait(uint16(port))

	mux := t.Client(s.Addr, client.DefaultConfig())
	mr := runLoad(t, mux, false)

	t.Field("calls", loadCalls)
	t.Field("goroutines", loadGoroutines)
	scenario.Expect(t, "perRequestOk", pr.ok.Load(), loadCalls)
	// One connection per attempt: under load an attempt may time out and
	// be retried, on a connection of its own, so attempts, not calls,
	// are what the count must match.
	conns, attempts := per.Stats().ConnsOpened, pr.attempts.Load()
	t.Volatile("perRequestNewConnections", conns)
	t.Volatile("perRequestAttempts", attempts)
	scenario.Expectf(t, "perRequestConnectionPerAttempt", conns == attempts, true, "%d connections for %d attempts", conns, attempts)
	t.Volatile("clientTimeWaitBefore", twBefore)
	t.Volatile("clientTimeWaitAfter", twAfter)
	t.Volatile("perRequestElapsed", scenario.Millis(pr.elapsed))
	scenario.Expect(t, "multiplexOk", mr.ok.Load(), loadCalls)
	scenario.Expect(t, "multiplexNewConnections", mux.Stats().ConnsOpened, 1)
	t.Volatile("multiplexElapsed", scenario.Millis(mr.elapsed))
	t.Check(twErr == nil, "reading /proc/net/tcp: %v", twErr)
	t.Check(twAfter > twBefore, "client TIME_WAIT sockets did not grow (%d -> %d)", twBefore, twAfter)
}

// timeWait counts sockets in TIME_WAIT whose remote port is port, from
// /proc/net/tcp and /proc/net/tcp6: on loopback these are the client's.
func timeWait(port uint16) (int, error) {
	n := 0
	for _, path := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(path)
		if err != nil {
			if os.IsNotExist(err) && path != "/proc/net/tcp" {
				continue
			}
			return n, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st ...; addresses are HEX_IP:HEX_PORT.
			fs := strings.Fields(sc.Text())
			if len(fs) < 4 || fs[3] != "06" {
				continue
			}
			_, rp, ok := strings.Cut(fs[2], ":")
			if ok && rp == fmt.Sprintf("%04X", port) {
				n++
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return n, err
		}
	}
	return n, nil
}
