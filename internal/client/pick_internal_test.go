package client

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// script returns intN answering from vals in turn.
func script(vals ...int) func(int) int {
	return func(n int) int {
		if len(vals) == 0 {
			return 0
		}
		v := vals[0]
		vals = vals[1:]
		if v >= n {
			panic("script: draw out of range")
		}
		return v
	}
}

func TestPick(t *testing.T) {
	idle := candidate{weight: 1}
	busy := func(n int64) candidate { return candidate{inFlight: n, weight: 1} }
	warming := func(w float64) candidate { return candidate{weight: w} }
	passed := candidate{weight: 1, passedOver: true}
	prev := func(c candidate) candidate { c.previous = true; return c }
	tests := []struct {
		name   string
		policy Balancer
		cs     []candidate
		next   uint64
		draws  []int
		coin   float64
		want   int
	}{
		{"p2c prefers fewer in flight", P2C, []candidate{busy(3), busy(1), busy(5)}, 0, []int{0, 0}, 0.5, 1},
		{"p2c prefers fewer in flight, either order", P2C, []candidate{busy(3), busy(1), busy(5)}, 0, []int{1, 1}, 0.5, 1},
		{"p2c draws two distinct", P2C, []candidate{busy(0), busy(9), busy(2)}, 0, []int{2, 1}, 0.5, 2},
		{"p2c tie goes to the first drawn", P2C, []candidate{idle, idle, idle}, 0, []int{2, 0}, 0.5, 2},
		{"p2c scores by weight", P2C, []candidate{busy(1), {inFlight: 0, weight: 0.4}}, 0, []int{0, 0}, 0, 0},
		{"p2c warming winner taken at its weight", P2C, []candidate{busy(4), warming(0.3)}, 0, []int{0, 0}, 0.29, 1},
		{"p2c warming winner passed to the other", P2C, []candidate{busy(4), warming(0.3)}, 0, []int{0, 0}, 0.3, 0},
		{"p2c passes over a failed address", P2C, []candidate{passed, busy(5)}, 0, nil, 0, 1},
		{"p2c retry avoids the previous address", P2C, []candidate{prev(idle), busy(5)}, 0, nil, 0, 1},
		{"p2c retry draws among the others", P2C, []candidate{busy(7), prev(idle), busy(6)}, 0, []int{0, 0}, 0.5, 2},
		{"previous taken when the only other is passed over", P2C, []candidate{prev(busy(2)), passed}, 0, nil, 0, 0},
		{"all passed over: one is still tried", P2C, []candidate{passed, passed}, 0, []int{1, 0}, 0.5, 1},
		{"round robin takes next", RoundRobin, []candidate{idle, idle, idle}, 4, nil, 0.5, 1},
		{"round robin ignores in flight", RoundRobin, []candidate{busy(9), idle, idle}, 3, nil, 0.5, 0},
		{"round robin skips a failed address", RoundRobin, []candidate{idle, passed, idle}, 1, nil, 0.5, 2},
		{"round robin retry skips the previous", RoundRobin, []candidate{prev(idle), idle, idle}, 0, nil, 0.5, 1},
		{"round robin warming taken at its weight", RoundRobin, []candidate{idle, warming(0.5), idle}, 1, nil, 0.4, 1},
		{"round robin warming passed to the next", RoundRobin, []candidate{idle, warming(0.5), idle}, 1, nil, 0.6, 2},
		{"pick first takes the first", PickFirst, []candidate{busy(9), idle}, 7, nil, 0.5, 0},
		{"pick first retry moves on", PickFirst, []candidate{prev(idle), idle}, 0, nil, 0.5, 1},
		{"no address", P2C, nil, 0, nil, 0, -1},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			d := draws{intN: script(tt.draws...), coin: tt.coin}
			if got := pick(tt.policy, tt.cs, tt.next, d); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestWarmWeight(t *testing.T) {
	const w = 2 * time.Second
	for _, tt := range []struct {
		since time.Duration
		want  float64
	}{
		{0, 0.1}, {-time.Second, 0.1}, {time.Second, 0.55}, {1500 * time.Millisecond, 0.775}, {w, 1}, {time.Hour, 1},
	} {
		if got := warmWeight(tt.since, w); got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("warmWeight(%v, %v): got %v, want %v", tt.since, w, got, tt.want)
		}
	}
}

func TestValidateBalancer(t *testing.T) {
	for _, tt := range []struct {
		name string
		mod  func(*Config)
		want string // "" for valid
	}{
		{"default", func(*Config) {}, ""},
		{"p2c with warm-up", func(c *Config) { c.Balancer, c.WarmUp = P2C, time.Second }, ""},
		{"unknown", func(c *Config) { c.Balancer = "least_loaded" }, `Balancer "least_loaded" unknown, want one of ["pick_first" "round_robin" "p2c"]`},
		{"negative warm-up", func(c *Config) { c.Balancer, c.WarmUp = RoundRobin, -1 }, "WarmUp -1ns must not be negative"},
		{"warm-up without spreading", func(c *Config) { c.WarmUp = time.Second }, "WarmUp 1s needs Balancer round_robin or p2c"},
		{"conn per call", func(c *Config) { c.Balancer, c.ConnPerCall = P2C, true }, "ConnPerCall needs Balancer pick_first"},
	} {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			cfg := DefaultConfig()
			tt.mod(&cfg)
			err := cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tt.want != "" && (!errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an ErrConfig saying %q", err, tt.want)
			}
		})
	}
}
