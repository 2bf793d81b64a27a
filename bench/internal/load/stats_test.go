package load

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ten := make([]time.Duration, 10)
	for i := range ten {
		ten[i] = time.Duration(i+1) * time.Millisecond
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i + 1)
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value", []time.Duration{7}, 99, 7},
		{"p50 of ten", ten, 50, 5 * time.Millisecond},
		{"p99 of ten", ten, 99, 10 * time.Millisecond},
		{"p100 of ten", ten, 100, 10 * time.Millisecond},
		{"p1 of ten", ten, 1, 1 * time.Millisecond},
		{"p50 of hundred", hundred, 50, 50},
		{"p99 of hundred", hundred, 99, 99},
		{"p99.5 of hundred", hundred, 99.5, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"none", nil, 0},
		{"odd", []float64{5, 1, 3}, 3},
		{"even", []float64{4, 1, 3, 2}, 2.5},
		{"outlier", []float64{10, 11, 1000, 12, 9}, 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append([]float64(nil), tt.xs...)
			if got := median(tt.xs); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			for i := range before {
				if tt.xs[i] != before[i] {
					t.Fatalf("median reordered its input: got %v, want %v", tt.xs, before)
				}
			}
		})
	}
}
