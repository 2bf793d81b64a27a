package grpc

import (
	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/fakestack"
	"github.com/rpcbench/rpcbench/internal/report"
)

// controls are the judge's negative controls (judge.Control): each runs
// one case of the group with a fake stack of one bug in grpc-go's
// column, and passes only when the judge failed the case for that bug.
// They show, in the group's own evidence, that the verdicts come from
// the server's log and the harness, not from what a stack says.
func controls() []judge.Control {
	adapter := func(mode string) []string { return []string{fakestack.EnvAdapter + "=" + mode} }
	server := func(mode string) []string { return []string{fakestack.EnvServer + "=" + mode} }
	return []judge.Control{
		{Name: "negative_control_grpc_adapter_retries_itself", Doc: "negative control: an adapter that makes every call twice through grpc-go, in grpc-go's default column against a refused stream: the judge must count two executions in the server's log and fail it",
			Case: "grpc_refused_stream_grpcgo_default", Stack: judge.StackGRPCGo, Env: adapter(fakestack.Twice), RealEnv: fakestack.EnvReal,
			Verdict: report.Fail, Want: []string{"exec_at_most_once:=violated", "pins no such violation"}},
		{Name: "negative_control_grpc_adapter_says_ok", Doc: "negative control: an adapter that answers every call OK without making it, against a GOAWAY below the stream: the judge must find no execution behind the OK and fail it",
			Case: "grpc_goaway_below_grpcgo_default", Stack: judge.StackGRPCGo, Env: adapter(fakestack.Liar),
			Verdict: report.Fail, Want: []string{"ok_only_if_executed:=violated", "pins no such violation"}},
		{Name: "negative_control_grpc_adapter_says_cancelled", Doc: "negative control: an adapter that makes each call through grpc-go once and reports it CANCELLED, though the harness cancelled nothing, against a server that never answers: the judge, reading every answer's code, must fail it on never_cancelled",
			Case: "grpc_noreply_within_deadline_grpcgo_default", Stack: judge.StackGRPCGo, Env: adapter(fakestack.Cancelled), RealEnv: fakestack.EnvReal,
			Verdict: report.Fail, Want: []string{"never_cancelled:=violated", "pins no such violation"}},
		{Name: "negative_control_grpc_adapter_fast_clock", Doc: "negative control: an adapter that makes each call through grpc-go once and claims it took 1ms, in grpc-go's default column, which does not hedge, against a get slept 1s: timed by the harness's own clock, the slow get still took 1s, the pinned finding",
			Case: "grpc_hedged_get_tail_grpcgo_default", Stack: judge.StackGRPCGo, Env: adapter(fakestack.FastClock), RealEnv: fakestack.EnvReal,
			Verdict: report.Finding, Want: []string{"hedge_cuts_tail:=violated", "slowestClaimed~=1ms"}},
		{Name: "negative_control_grpcserver_runs_expired", Doc: "negative control: a server adapter that ignores grpc-timeout, in grpc-go's server column, sent debits whose deadline had passed: the judge must find them executed in the server's own record and fail it",
			Case: "grpcserver_timeout_0n_grpcgo", Stack: judge.StackGRPCGo, Env: server(fakestack.SrvExpired),
			Verdict: report.Fail, Want: []string{"srv_expired_not_executed:=violated"}},
		{Name: "negative_control_grpcserver_exec_twice", Doc: "negative control: a server adapter that applies a debit twice in one handler, writing an exec for each and its bank agreeing: the judge must refuse the second exec of one call as a broken protocol, an ERROR",
			Case: "grpcserver_timeout_597h_grpcgo", Stack: judge.StackGRPCGo, Env: server(fakestack.SrvExecTwice),
			Verdict: report.Error, Want: []string{"a second exec of call"}},
	}
}
