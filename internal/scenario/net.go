package scenario

import (
	"time"

	"github.com/rpcbench/rpcbench/internal/nethost"
	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// Host makes a test host that is removed when the scenario ends.
func (t *T) Host() *nethost.Host {
	h, err := nethost.New()
	if err != nil {
		t.Fatalf("test host: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Failures = append(t.Failures, "removing test host: "+err.Error())
		}
	})
	return h
}

// SetLink sets h's link up or down, failing the scenario if it cannot.
func (t *T) SetLink(h *nethost.Host, up bool) {
	if err := h.SetLink(up); err != nil {
		t.Fatalf("link: %v", err)
	}
}

// KillServer SIGKILLs s and waits until it is gone.
func (t *T) KillServer(s *Server) {
	if err := s.Kill(); err != nil {
		t.Fatalf("%v", err)
	}
}

// AwaitReceived waits until s has received n debits, asking over a
// control connection (the link must be up).
func (t *T) AwaitReceived(s *Server, n int64) {
	if !WaitFor(10*time.Second, func() bool { return t.Counters(s).RequestsDebit >= n }) {
		t.Fatalf("the server never received debit %d", n)
	}
}

// ExecLogged counts the EXEC events s has logged for method.
func (t *T) ExecLogged(s *Server, method string) int {
	return CountEvents(t.Events(s), func(e serverapi.Event) bool {
		return e.Name == serverapi.EventExec && e.Text(serverapi.KeyMethod) == method
	})
}
