package client_test

import (
	"fmt"
	"testing"

	"github.com/rpcbench/rpcbench/internal/client"
)

func TestStringers(t *testing.T) {
	tests := []struct {
		v    fmt.Stringer
		want string
	}{
		{client.ClassNotSent, "NOT_SENT"},
		{client.ClassNotExecuted, "NOT_EXECUTED"},
		{client.ClassUnknown, "OUTCOME_UNKNOWN"},
		{client.ClassFinal, "FINAL"},
		{client.Class(0), "UNKNOWN_CLASS_0"},
		{client.Class(7), "UNKNOWN_CLASS_7"},
		{client.OutcomeConnectFailed, "CONNECT_FAILED"},
		{client.OutcomeNotSent, "CONN_DEAD_BEFORE_SEND"},
		{client.OutcomeResponse, "RESPONSE"},
		{client.OutcomeTimeout, "TIMEOUT"},
		{client.OutcomeCanceled, "CANCELED"},
		{client.OutcomeConnLost, "CONN_LOST_AFTER_SEND"},
		{client.OutcomeProtocolError, "PROTOCOL_ERROR_AFTER_SEND"},
		{client.OutcomeAbandoned, "ABANDONED"},
		{client.Outcome(0), "UNKNOWN_OUTCOME_0"},
		{client.Outcome(99), "UNKNOWN_OUTCOME_99"},
		{client.StopFinal, "final"},
		{client.StopNotRetryable, "outcome_unknown_not_retryable"},
		{client.StopMaxAttempts, "max_attempts"},
		{client.StopBackoffCrosses, "backoff_would_cross_deadline"},
		{client.StopDeadline, "deadline"},
		{client.StopCanceled, "canceled"},
		{client.StopClosed, "client_closed"},
		{client.StopClientBusy, "client_busy"},
		{client.StopRateLimited, "rate_limited"},
		{client.StopCircuitOpen, "circuit_open"},
		{client.StopRetryBudget, "retry_budget_exhausted"},
		{client.StopPushback, "server_pushback"},
		{client.Stop(0), "unknown_stop_0"},
		{client.Stop(200), "unknown_stop_200"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.v.String(); got != tt.want {
				t.Errorf("%T(%d).String() = %q, want %q", tt.v, tt.v, got, tt.want)
			}
		})
	}
}
