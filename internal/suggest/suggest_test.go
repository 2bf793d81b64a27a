package suggest

import (
	"slices"
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"debit", "debit", 0}, {"debti", "debit", 2}, {"get", "gets", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestNear(t *testing.T) {
	have := []string{"pkg.Bank/Debit", "pkg.Bank/Get", "pkg.Bank/Echo", "pkg.Audit/DebitLog"}
	last := func(s string) string { return strings.ToLower(s[strings.LastIndexAny(s, "./")+1:]) }
	got := Near("Debti", have, last)
	if want := []string{"pkg.Bank/Debit"}; !slices.Equal(got, want) {
		t.Errorf("Near(Debti) = %q, want %q", got, want)
	}
	// Contained, nearest first.
	got = Near("debit", have, last)
	if want := []string{"pkg.Bank/Debit", "pkg.Audit/DebitLog"}; !slices.Equal(got, want) {
		t.Errorf("Near(debit) = %q, want %q", got, want)
	}
	if got := Near("transfer", have, last); len(got) != 0 {
		t.Errorf("Near(transfer) = %q, want none", got)
	}
}
