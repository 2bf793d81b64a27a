package report

import "testing"

func TestServerLogNumber(t *testing.T) {
	tests := []struct {
		file, name string
		want       int
	}{
		{ServerLog("late", 1), "late", 1},
		{ServerLog("late", 2), "late", 2},
		{ServerLog("late", 12), "late", 12},
		{"server-late-02.log", "late", 0},
		{"server-late-1.log", "late", 0},
		{"server-late_more.log", "late", 0},
		{ServerLog("late_more", 1), "late", 0},
		{NoServerNote("late"), "late", 0},
		{TraceLog("late"), "late", 0},
	}
	for _, tt := range tests {
		if got := ServerLogNumber(tt.file, tt.name); got != tt.want {
			t.Errorf("ServerLogNumber(%q, %q) = %d, want %d", tt.file, tt.name, got, tt.want)
		}
	}
}
