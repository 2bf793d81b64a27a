package load

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name string
		stat string
		want time.Duration
		ok   bool
	}{
		{
			name: "plain",
			stat: "4242 (rpcserver) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 25 0 0 20 0 7 0 1000 0 0",
			want: 1750 * time.Millisecond, ok: true,
		},
		{
			name: "name with spaces and parentheses",
			stat: "7 (a) b (c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 5 0 0",
			want: 70 * time.Millisecond, ok: true,
		},
		{name: "no name", stat: "7 a R 1", ok: false},
		{name: "truncated", stat: "7 (a) R 1 7 7 0", ok: false},
		{name: "not a number", stat: "7 (a) R 1 7 7 0 -1 0 0 0 0 0 x 4 0", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tt.stat))
			if (err == nil) != tt.ok {
				t.Fatalf("error: got %v, want ok=%v", err, tt.ok)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestProcCPUOfSelf(t *testing.T) {
	if _, err := procCPU(os.Getpid()); err != nil {
		t.Fatalf("procCPU(self): %v", err)
	}
	if _, err := selfCPU(); err != nil {
		t.Fatalf("selfCPU: %v", err)
	}
}

func TestParseStatusRSS(t *testing.T) {
	tests := []struct {
		name, status string
		want         int64
		ok           bool
	}{
		{"plain", "Name:\trpcserver\nVmPeak:\t  99999 kB\nVmRSS:\t   12345 kB\nRssAnon:\t 100 kB\n", 12345, true},
		{"no VmRSS", "Name:\trpcserver\nVmPeak:\t  99999 kB\n", 0, false},
		{"other unit", "VmRSS:\t12 MB\n", 0, false},
		{"not a number", "VmRSS:\tlots kB\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatusRSS([]byte(tt.status))
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("got %d, %v, want %d and error=%v", got, err, tt.want, !tt.ok)
			}
		})
	}
}

func TestParseLimitsNoFile(t *testing.T) {
	const head = "Limit                     Soft Limit           Hard Limit           Units     \n" +
		"Max processes             95000                95000                processes \n"
	tests := []struct {
		name, limits string
		want         int64
		ok           bool
	}{
		{"plain", head + "Max open files            20000                20000                files     \n", 20000, true},
		{"unlimited", head + "Max open files            unlimited            unlimited            files     \n", -1, true},
		{"missing", head, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLimitsNoFile([]byte(tt.limits))
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("got %d, %v, want %d and error=%v", got, err, tt.want, !tt.ok)
			}
		})
	}
}

func TestProcRSSSelf(t *testing.T) {
	rss, err := procRSS(os.Getpid())
	if err != nil || rss <= 0 {
		t.Errorf("got %d KiB, %v, want a positive RSS", rss, err)
	}
	n, err := procMaxFiles(os.Getpid())
	if err != nil || n == 0 {
		t.Errorf("got max open files %d, %v, want a limit", n, err)
	}
}
