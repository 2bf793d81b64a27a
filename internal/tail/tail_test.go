package tail

import (
	"strings"
	"testing"
)

func TestTail(t *testing.T) {
	long := strings.Repeat("x", Max)
	tests := []struct {
		name   string
		writes []string
		n      int
		want   string
	}{
		{"nothing", nil, 5, ""},
		{"fewer lines than asked", []string{"a\n", "b\n"}, 5, "a\nb"},
		{"last lines only", []string{"a\nb\n", "c\nd"}, 2, "c\nd"},
		{"blank lines at the end dropped", []string{"a\nb\n\n\n"}, 1, "b"},
		{"a line split across writes", []string{"ab", "c\nd", "e\n"}, 2, "abc\nde"},
		{"older bytes dropped", []string{"first\n", long}, 5, long},
		{"one write over the limit", []string{"first\n" + long}, 5, long},
		{"the limit kept exactly", []string{"a\n", long[2:]}, 5, "a\n" + long[2:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tl Buffer
			for _, w := range tt.writes {
				if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%d bytes): got %d, %v, want %d, nil", len(w), n, err, len(w))
				}
			}
			if got := tl.Lines(tt.n); got != tt.want {
				t.Errorf("Lines(%d): got %.40q (%d bytes), want %.40q (%d bytes)", tt.n, got, len(got), tt.want, len(tt.want))
			}
			if len(tl.buf) > Max {
				t.Errorf("kept %d bytes, want at most %d", len(tl.buf), Max)
			}
		})
	}
}
