package transport_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/transport"
)

func TestPlanTCP(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name                    string
		keepAlive, writeTimeout time.Duration
		want                    transport.TCPTuning
	}{
		{"defaults", 15 * s, 10 * s, transport.TCPTuning{KeepAlive: true, Idle: 15 * s, Interval: 5 * s, Probes: 3, UserTimeout: 27500 * time.Millisecond}},
		{"no keepalive", 0, 10 * s, transport.TCPTuning{UserTimeout: 10 * s}},
		{"short write timeout", s, 500 * time.Millisecond, transport.TCPTuning{KeepAlive: true, Idle: s, Interval: s, Probes: 3, UserTimeout: 3500 * time.Millisecond}},
		{"idle rounded up", 1500 * time.Millisecond, 10 * s, transport.TCPTuning{KeepAlive: true, Idle: 2 * s, Interval: 2 * s, Probes: 3, UserTimeout: 10 * s}},
		{"interval at most idle", 15 * s, time.Minute, transport.TCPTuning{KeepAlive: true, Idle: 15 * s, Interval: 15 * s, Probes: 3, UserTimeout: time.Minute}},
		{"interval in whole seconds", 15 * s, 7 * s, transport.TCPTuning{KeepAlive: true, Idle: 15 * s, Interval: 3 * s, Probes: 3, UserTimeout: 22500 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := transport.PlanTCP(tt.keepAlive, tt.writeTimeout)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PlanTCP(%v, %v) (-want +got):\n%s", tt.keepAlive, tt.writeTimeout, diff)
			}
		})
	}
}
