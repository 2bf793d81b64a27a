package report

import (
	"strings"
	"testing"
	"time"
)

func TestShort(t *testing.T) {
	pass := Line{Name: "late", Verdict: Pass, Fields: []Field{
		{Key: "A", Kind: Asserted, Value: "DEADLINE_EXCEEDED"},
		{Key: "aElapsed", Kind: Volatile, Value: "200ms"},
		{Key: "B", Kind: Recorded, Value: "OK account=acct-B"},
		{Key: "budget", Kind: Bound, Value: "2000ms"},
		{Key: "lateDropped", Kind: Asserted, Value: "1"},
	}}
	fail := Line{Name: "debit", Verdict: Fail, Fields: []Field{
		{Key: "balance", Kind: Asserted, Value: "980"},
		{Key: WhyKey, Value: "balance=980, want 990"},
	}}
	tests := []struct {
		name  string
		l     Line
		width int
		want  string
	}{
		{"checked fields only", pass, 200, "PASS late     0.21s  A==DEADLINE_EXCEEDED  budget<=2000ms  lateDropped==1"},
		{"cut to the width", pass, 50, "PASS late     0.21s  A==DEADLINE_EXCEEDED  …"},
		{"a failure shows why", fail, 200, "FAIL debit    0.21s\n    balance=980, want 990"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Short(tt.l, 210*time.Millisecond, 6, tt.width)
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			for _, line := range strings.Split(got, "\n")[:1] {
				if n := len([]rune(line)); n > tt.width {
					t.Errorf("%d columns, want at most %d", n, tt.width)
				}
			}
		})
	}
}
