package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rpcbench/rpcbench/internal/bank"
	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/trace"
)

// errUnknownOutcome is returned by a call that ended UNKNOWN: the request
// may or may not have executed. It wraps errFailed, because the command's
// output already says so and it must not be printed again; exitCode must
// test for it before errFailed to give it its own exit code.
var errUnknownOutcome = fmt.Errorf("rpcbench: call outcome unknown: %w", errFailed)

// stdinPayload is the PAYLOAD argument that reads the payload from stdin.
const stdinPayload = "-"

type callOptions struct {
	*app
	// In is read, to its end, for the payload when Payload is "-".
	In io.Reader

	// Addrs are the servers, tried in order; more than one makes a client
	// that fails over between them (client.NewMulti).
	Addrs  []string
	Method string
	// Payload is sent as is; "-" means the bytes of In.
	Payload string
	// Key is the idempotency key; "" sends none.
	Key        string
	Idempotent bool
	// Timeout bounds the whole call, every attempt and pause included.
	Timeout time.Duration
	// AttemptTimeout bounds one attempt.
	AttemptTimeout time.Duration
	// Retries is how many attempts may follow the first: MaxAttempts-1.
	Retries int
	// Jitter is client.Config.Jitter.
	Jitter float64
	// JSON prints the whole result as one JSON object on stdout instead of
	// the payload on stdout and the attempt log on stderr.
	JSON bool
}

func newCallCmd(a *app) *cobra.Command {
	def := client.DefaultConfig()
	o := &callOptions{app: a}
	cmd := &cobra.Command{
		Use:   "call ADDR METHOD [PAYLOAD | -]",
		Short: "Send one call through the client and show every attempt it made",
		Long: `Send one call to an rpcserver through the real client, with its timeouts,
classification and retry rules, and show what happened: the server's
payload on stdout, and on stderr one line per attempt (its outcome, the
status the server answered, the request ID, the budget sent in ms, the
attempt's class and the pause that followed it) then the final status,
the number of attempts, why the client stopped and how long the call took.

ADDR is host:port, or several separated by commas (spaces around each
are ignored): the client then uses the first and fails over to the next
when a dial fails or a connection dies. A malformed ADDR is a usage error,
before anything is sent. METHOD is get, debit or a control method (ctl.stats, ctl.fault,
ctl.clear, ctl.ping). PAYLOAD is sent byte for byte, empty when absent;
"-" reads it from stdin, trailing newline included (the bank's payload
grammar ignores it, but a key's fingerprint does not).

An attempt whose outcome is unknown (the request was written and no answer
came) is retried only when the call carries an idempotency key (--key) or
is declared --idempotent; otherwise the call ends UNKNOWN. A get is not
treated as idempotent unless you say so.

--json prints one object instead, on stdout:
  {"status", "payload", "stop", "elapsed_ms", "error",
   "attempts": [{"client", "call", "attempt", "method", "key", "id",
                 "start", "end", "outcome", "class", "status",
                 "budget_ms", "backoff_ms", "addr", "err"}]}
each attempt as an evidence directory's logs/trace-NAME.jsonl records it
(backoff_ms in whole milliseconds). Every field is always present: "" for
an attempt with no answer's status, or for no error. The payload is a JSON
string (payloads are text).

Exit status: 0 OK; 1 any other final status (APP_ERROR, INVALID_ARGUMENT,
DEADLINE_EXCEEDED, UNAVAILABLE); 3 UNKNOWN: the request may or may not
have executed; 2 usage error (a bad flag or argument, a method or key the
protocol cannot carry); 130/143 interrupted, after printing what the call
knew.`,
		Example: `  # Read an account. Say a get is idempotent, so that an unknown outcome is retried.
  rpcbench call 127.0.0.1:41234 get account=alice --idempotent

  # Debit with an idempotency key: retried after a timeout, executed once.
  rpcbench call 127.0.0.1:41234 debit "account=alice amount=10" --key order-17

  # Poke a hand-started rpcserver: the next debit executes and is never
  # answered, so a keyless debit ends UNKNOWN (exit 3) after one attempt.
  rpcbench call 127.0.0.1:41234 ctl.fault "kind=noreply method=debit count=1"
  rpcbench call 127.0.0.1:41234 debit "account=alice amount=10" --attempt-timeout 100ms
  rpcbench call 127.0.0.1:41234 ctl.stats
  rpcbench call 127.0.0.1:41234 ctl.clear

  # Backoffs without jitter (20, 40, 80 ms), at most 2 retries, 1s in all.
  rpcbench call 127.0.0.1:41234 get account=alice --idempotent --jitter 0 --retries 2 --timeout 1s

  # Payload from stdin; the result as JSON.
  echo account=alice | rpcbench call 127.0.0.1:41234 get - --json | jq -r .status

  # Two servers on one durable store: fail over from the first to the second.
  rpcbench call 127.0.0.1:41234,127.0.0.1:41235 debit "account=alice amount=1" --key k1`,
		Args: usageArgs(cobra.RangeArgs(2, 3)),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) == 1 {
				return []cobra.Completion{bank.MethodGet, bank.MethodDebit, serverapi.MethodStats, serverapi.MethodFault, serverapi.MethodClear, serverapi.MethodPing}, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Addrs = strings.Split(args[0], ",")
			o.Method = args[1]
			o.Payload = ""
			if len(args) == 3 {
				o.Payload = args[2]
			}
			o.In = cmd.InOrStdin()
			return runCall(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Key, "key", "", fmt.Sprintf("idempotency key (at most %d bytes): a retry after an unknown outcome is safe, the server replays the first answer", proto.MaxKeyLen))
	f.BoolVar(&o.Idempotent, "idempotent", false, "declare the call idempotent: retried after an unknown outcome, and never ends UNKNOWN")
	f.DurationVar(&o.Timeout, "timeout", def.Deadline, "bound on the whole call, every attempt and pause included")
	f.DurationVar(&o.AttemptTimeout, "attempt-timeout", def.AttemptTimeout, "bound on one attempt, from connect to answer; the budget sent is at most this")
	f.IntVar(&o.Retries, "retries", def.MaxAttempts-1, "attempts allowed after the first")
	f.Float64Var(&o.Jitter, "jitter", def.Jitter, "spread of each backoff pause, in [0,1); 0 makes pauses exact")
	f.BoolVar(&o.JSON, "json", false, "print the status, payload and attempt log as one JSON object on stdout")
	return cmd
}

func runCall(ctx context.Context, o *callOptions) error {
	cfg := client.DefaultConfig()
	cfg.Deadline, cfg.AttemptTimeout, cfg.Jitter = o.Timeout, o.AttemptTimeout, o.Jitter
	switch {
	case o.Timeout <= 0:
		return usageErrorf("", "--timeout %v: must be positive", o.Timeout)
	case o.AttemptTimeout <= 0:
		return usageErrorf("", "--attempt-timeout %v: must be positive", o.AttemptTimeout)
	case o.Retries < 0 || o.Retries >= maxRetries:
		return usageErrorf("", "--retries %d: want a whole number from 0 to %d", o.Retries, maxRetries-1)
	case o.Jitter < 0 || o.Jitter >= 1:
		return usageErrorf("", "--jitter %v: want a number in [0,1)", o.Jitter)
	}
	cfg.MaxAttempts = o.Retries + 1
	// The attempts as evidence traces record them, for --json.
	var recs []trace.Record
	cfg.Trace = func(call *client.Call, log []client.Attempt, spans []client.Span) {
		recs = trace.Records(1, 1, call, log, spans)
	}
	addrs, err := checkAddrs(o.Addrs)
	if err != nil {
		return &usageError{err: fmt.Errorf("ADDR %q: %w", strings.Join(o.Addrs, ","), err), choices: callAddrHelp}
	}
	c, err := client.NewMulti(addrs, cfg)
	if err != nil {
		return usageErrorf("", "ADDR %q: %v", strings.Join(o.Addrs, ","), err)
	}
	defer c.Close()

	payload := []byte(o.Payload)
	if o.Payload == stdinPayload {
		// One byte more than any frame can carry is enough for the
		// client to refuse an oversize payload.
		if payload, err = io.ReadAll(io.LimitReader(o.In, proto.MaxFrameLen+1)); err != nil {
			return fmt.Errorf("reading the payload from stdin: %w", err)
		}
	}
	call := client.Call{Method: o.Method, Key: o.Key, Idempotent: o.Idempotent, Payload: payload}
	res := c.Do(ctx, call)
	if len(res.Log) == 0 && errors.Is(res.Err, proto.ErrInvalidFrame) {
		// The client refused to send it: the command line's fault.
		return usageErrorf("", "%v", res.Err)
	}

	if o.JSON {
		err = writeCallJSON(o.Out, res, recs)
	} else {
		err = writeCallText(o.Out, o.Err, call, res)
	}
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", errInterrupted, context.Cause(ctx))
	}
	switch res.Status {
	case proto.StatusOK:
		return nil
	case proto.StatusUnknown:
		return errUnknownOutcome
	default:
		return errFailed
	}
}

// callAddrHelp is printed below a malformed ADDR of call.
const callAddrHelp = "ADDR is host:port, such as 127.0.0.1:41234 or localhost:41234, or several separated by commas: 127.0.0.1:41234,127.0.0.1:41235"

// checkAddrs returns addrs with the spaces around each removed, or what
// is wrong with the first that is not a host:port a dial can use. The
// client would take a malformed address for a server that cannot be
// reached and retry it; the mistake is the command line's, and is
// caught before anything is sent.
func checkAddrs(addrs []string) ([]string, error) {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		a = strings.TrimSpace(a)
		err := checkAddr(a)
		switch {
		case err == nil:
			out[i] = a
			continue
		case len(addrs) == 1:
			return nil, err
		case a == "":
			return nil, fmt.Errorf("address %d of %d is empty", i+1, len(addrs))
		}
		return nil, fmt.Errorf("address %d %q: %w", i+1, a, err)
	}
	return out, nil
}

// checkAddr reports what is wrong with addr as host:port, or nil. The
// host may be empty (the local system, as for net.Dial); the port must
// be a number, since a service name is almost always a typing mistake
// here.
func checkAddr(addr string) error {
	if addr == "" {
		return errors.New("empty")
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		// *net.AddrError repeats the address, which the caller names.
		if ae, ok := errors.AsType[*net.AddrError](err); ok {
			return errors.New(ae.Err)
		}
		return err
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return nil
}

// maxRetries bounds --retries so that MaxAttempts cannot overflow; no
// deadline leaves room for that many attempts anyway.
const maxRetries = 1_000_000

// writeCallText writes the payload to out, with a newline unless it is
// empty or ends with one, and the attempt log and the final status to
// log, with what to do next when the outcome is unknown:
//
//	a1 TIMEOUT err="context deadline exceeded" id=1 budget=299 class=OUTCOME_UNKNOWN backoff=22ms
//	a2 RESPONSE status=OK id=2 budget=300 class=FINAL
//	status=OK attempts=2 stop=final elapsed=324.1ms
func writeCallText(out, log io.Writer, call client.Call, res client.Result) error {
	for i, a := range res.Log {
		fmt.Fprintf(log, "a%d %v\n", i+1, a)
	}
	fmt.Fprintf(log, "status=%v attempts=%d stop=%v elapsed=%v", res.Status, res.Attempts, res.Stop, res.Elapsed.Round(100*time.Microsecond))
	if res.Err != nil {
		fmt.Fprintf(log, " err=%q", res.Err.Error())
	}
	fmt.Fprintln(log)
	if res.Status == proto.StatusUnknown {
		fmt.Fprintln(log, "UNKNOWN: the request may or may not have executed; "+unknownHint(call))
	}
	if len(res.Payload) == 0 {
		return nil
	}
	if _, err := out.Write(res.Payload); err != nil {
		return err
	}
	if res.Payload[len(res.Payload)-1] != '\n' {
		_, err := io.WriteString(out, "\n")
		return err
	}
	return nil
}

// repeatable are the methods a second execution of leaves as the first
// did, so that --idempotent, not a key, is what lets the client retry
// them. debit is the one write that a key protects; the other methods
// (ctl.fault adds a rule each time) are neither.
var repeatable = map[string]bool{
	bank.MethodGet: true, bank.MethodEcho: true,
	serverapi.MethodStats: true, serverapi.MethodPing: true, serverapi.MethodClear: true,
}

// unknownHint says what to do about a call that ended UNKNOWN. It follows
// the call: what protects a re-send of it is a key when it carried one,
// --idempotent for a method that is safe to repeat, a key for a debit,
// and for any other method only knowing that it did not execute.
func unknownHint(c client.Call) string {
	switch {
	case c.Key != "":
		return fmt.Sprintf("re-sending it with the same --key %s is safe: the server executes it at most once", c.Key)
	case c.Idempotent:
		return "it is declared --idempotent, so re-sending it is safe"
	case repeatable[c.Method]:
		return fmt.Sprintf("a %s is safe to repeat: re-send it, with --idempotent so that the client retries it by itself", c.Method)
	case c.Method == bank.MethodDebit:
		return "find out whether it did before re-sending it, and send a debit with --key so that the client can retry it safely"
	default:
		return fmt.Sprintf("re-send it only once you know it did not; if %s is safe to repeat, --idempotent lets the client retry it by itself", c.Method)
	}
}

// callJSON is the --json form of a call's result. Every field is always
// present, so that a reader can tell an empty value from a missing one.
// Attempts are records as an evidence directory's traces hold them
// (package trace).
type callJSON struct {
	Status    string         `json:"status"`
	Payload   string         `json:"payload"`
	Stop      string         `json:"stop"`
	ElapsedMs float64        `json:"elapsed_ms"`
	Error     string         `json:"error"`
	Attempts  []trace.Record `json:"attempts"`
}

func newCallJSON(res client.Result, recs []trace.Record) callJSON {
	j := callJSON{
		Status:    res.Status.String(),
		Payload:   string(res.Payload),
		Stop:      res.Stop.String(),
		ElapsedMs: ms(res.Elapsed),
		Attempts:  recs,
	}
	if j.Attempts == nil {
		j.Attempts = []trace.Record{}
	}
	if res.Err != nil {
		j.Error = res.Err.Error()
	}
	return j
}

func writeCallJSON(out io.Writer, res client.Result, recs []trace.Record) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(newCallJSON(res, recs))
}

// ms returns d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
