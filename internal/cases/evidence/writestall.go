package evidence

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/scenario"
)

// writeStallWrittenNotResent: a server that stops reading blocks the
// client's write part-way through a batch of requests, and the write
// timeout kills the connection. Requests whose write had started may
// already be in the network, so their outcome is unknown: a keyless debit
// among them must not be re-sent. Requests still queued were not sent and
// are retried. The server then resumes reading and executes what it was
// sent; no debit may execute twice.
func writeStallWrittenNotResent(t *scenario.T) {
	const (
		calls = 100
		// Each debit is padded to about 60 KiB, so that the batch is far
		// larger than the socket buffers between client and relay.
		padBytes     = 60 << 10
		writeTimeout = 200 * time.Millisecond
	)
	s := t.StartServer(scenario.ServerOpts{})
	relay := t.StartStallRelay(s.Addr)
	cfg := client.DefaultConfig()
	cfg.WriteTimeout = writeTimeout
	// Attempts outlast the write timeout, so that the write timeout is
	// what ends them.
	cfg.AttemptTimeout, cfg.Deadline = 5*time.Second, 10*time.Second
	c := t.Client(relay.Addr(), cfg)
	pad := " pad=" + strings.Repeat("x", padBytes)
	results := make([]client.Result, calls)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			call := scenario.DebitCall(fmt.Sprintf("acct-s%d", i), 1, "")
			call.Payload = append(call.Payload, pad...)
			results[i] = c.Do(t.Ctx, call)
		})
	}
	wg.Wait()
	forwarded, err := relay.Resume()
	if err != nil {
		t.Fatalf("relay: resume the stalled connection: %v", err)
	}
	// The server has read the stalled connection to its end; the debits
	// it read are executed, or answered unexecuted, soon after.
	scenario.WaitFor(5*time.Second, func() bool {
		ctr := t.Counters(s)
		return ctr.ExecDebit+ctr.Expired >= ctr.RequestsDebit
	})

	var ok, unknown, other, stalled, notSentFirst, unknownExecuted, okNotOnce, executedTwice int
	var firstOther string
	for i, r := range results {
		account := fmt.Sprintf("acct-s%d", i)
		execs := bank.DefaultBalance - t.Balance(s, account)
		if execs > 1 {
			executedTwice++
		}
		if len(r.Log) > 0 && r.Log[0].Class == client.ClassNotSent {
			notSentFirst++
		}
		switch r.Status {
		case proto.StatusOK:
			ok++
			if execs != 1 {
				okNotOnce++
			}
		case proto.StatusUnknown:
			unknown++
			if execs == 1 {
				unknownExecuted++
			}
			if errors.Is(r.Err, os.ErrDeadlineExceeded) {
				stalled++
			}
		default:
			other++
			if firstOther == "" {
				firstOther = fmt.Sprintf("%s: %v %s", account, r.Status, scenario.AttemptLog(r))
			}
		}
	}

	t.Field("calls", calls)
	scenario.Expectf(t, "writeStalled", stalled > 0, true, "no call lost its connection to the write timeout: the case proves nothing")
	scenario.Expectf(t, "unknownExecutedAfterResume", unknownExecuted > 0, true, "no request written before the stall executed once the server resumed: the case proves nothing")
	scenario.Expectf(t, "executedTwice", executedTwice, 0, "a debit written before the stall was re-sent")
	scenario.Expectf(t, "okNotExecutedOnce", okNotOnce, 0, "an OK debit did not execute exactly once")
	scenario.Expectf(t, "otherStatus", other, 0, "every debit must end OK or UNKNOWN; first: %s", firstOther)
	t.Volatile("ok", ok)
	t.Volatile("unknown", unknown)
	t.Volatile("unknownExecuted", unknownExecuted)
	t.Volatile("notSentThenRetried", notSentFirst)
	t.Volatile("bytesReadAfterResume", forwarded)
	t.Check(unknown == stalled, "%d UNKNOWN debits, %d of them lost to the write timeout; want all", unknown, stalled)
}
