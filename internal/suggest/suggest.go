// Package suggest finds, among the names a command knows, those nearest
// one the user typed, for an error that says what they may have meant.
package suggest

import (
	"slices"
	"strings"
)

// Distance is the Levenshtein distance of a and b.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Near returns the names of have within 2 edits of name, or containing
// it (4 characters or more), nearest first; both compared as key gives
// them (nil: as they are).
func Near(name string, have []string, key func(string) string) []string {
	if key == nil {
		key = func(s string) string { return s }
	}
	type cand struct {
		name string
		d    int
	}
	k := key(name)
	var cs []cand
	for _, h := range have {
		hk := key(h)
		d := Distance(k, hk)
		if d <= 2 || (len(k) >= 4 && strings.Contains(hk, k)) {
			cs = append(cs, cand{h, d})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out
}
