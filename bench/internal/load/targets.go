package load

import (
	"fmt"
	"slices"
	"strings"
)

// Target is a ratio between two rows that the project aims for: the
// numerator system's figure over the denominator's, at G, at least Min.
type Target struct {
	Num, Den string // system keys
	G        int
	// MB compares MB/s instead of calls/s.
	MB  bool
	Min float64
}

// Targets are the ratios the performance issues set, in the order the
// targets table lists them.
func Targets() []Target {
	return []Target{
		{Num: KeyRPCBench, Den: KeyRawGet, G: 8, Min: 0.9},
		{Num: KeyRPCBench, Den: KeyRawGet, G: 64, Min: 0.9},
		{Num: KeyRPCBench, Den: KeyRaw, G: 8, Min: 0.85},
		{Num: KeyRPCBench, Den: KeyRaw, G: 64, Min: 0.85},
		{Num: KeyRPCBench, Den: KeyDRPC, G: 8, Min: 2},
		{Num: KeyRPCBench, Den: KeyDRPC, G: 64, Min: 2},
		{Num: KeyRPCBench16k, Den: KeyRaw16k, G: 8, MB: true, Min: 0.8},
		{Num: KeyRPCBench16k, Den: KeyRaw16k, G: 64, MB: true, Min: 0.8},
		{Num: KeyRPCBench64, Den: KeyRaw64, G: conns64 * perConn64, Min: 0.8},
		{Num: KeyIdle, Den: KeyRPCBench, G: idleG, Min: idleTarget},
	}
}

// Pair is a Target as a run measured it: the ratio of the two rows'
// figures in each round where both ran, the rows being interleaved
// within the round, so that each ratio compares rows measured seconds
// apart under the same load.
type Pair struct {
	Target
	// Name is "NUM / DEN", with the systems' table names.
	Name string `json:"name"`
	// Ratios are the per-round ratios, in round order.
	Ratios []float64 `json:"ratios"`
	// Median, Lo and Hi summarize Ratios.
	Median float64 `json:"median"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
}

// Met reports whether the median ratio reaches the target.
func (p *Pair) Met() bool { return p.Median >= p.Min }

// pairs measures each target whose two rows ran at its G in at least one
// common round.
func pairs(targets []Target, systems []System, samples []Sample) []Pair {
	name := map[string]string{}
	for _, s := range systems {
		name[s.Key] = s.Name
	}
	type at struct {
		system string
		g      int
		round  int
	}
	fig := map[at]Sample{}
	for _, s := range samples {
		fig[at{s.System, s.G, s.Round}] = s
	}
	var out []Pair
	for _, t := range targets {
		num, den := name[t.Num], name[t.Den]
		if num == "" || den == "" {
			continue
		}
		p := Pair{Target: t, Name: num + " / " + den}
		var rounds []int
		for _, s := range samples {
			if s.System == num && s.G == t.G {
				rounds = append(rounds, s.Round)
			}
		}
		slices.Sort(rounds)
		for _, r := range slices.Compact(rounds) {
			n, okN := fig[at{num, t.G, r}]
			d, okD := fig[at{den, t.G, r}]
			if !okN || !okD {
				continue
			}
			nv, dv := n.CallsPerSec(), d.CallsPerSec()
			if t.MB {
				nv, dv = n.MBPerSec(), d.MBPerSec()
			}
			if dv > 0 {
				p.Ratios = append(p.Ratios, nv/dv)
			}
		}
		if len(p.Ratios) == 0 {
			continue
		}
		p.Median = median(p.Ratios)
		p.Lo, p.Hi = slices.Min(p.Ratios), slices.Max(p.Ratios)
		out = append(out, p)
	}
	return out
}

// writePairs writes the targets table: each target's median per-round
// ratio, its range over the rounds, and whether the median reaches it.
func writePairs(b *strings.Builder, ps []Pair) {
	if len(ps) == 0 {
		return
	}
	b.WriteString("Targets, from interleaved pairs: in each round the two rows ran seconds apart, under the same load; " +
		"the ratio is taken round by round, then its median and range over the rounds.\n\n")
	b.WriteString("| ratio | G | of | median | range over rounds | target | |\n")
	b.WriteString("|---|---:|---|---:|---|---:|---|\n")
	for _, p := range ps {
		of, verdict := "calls/s", "met"
		if p.MB {
			of = "MB/s"
		}
		if !p.Met() {
			verdict = "**not met**"
		}
		fmt.Fprintf(b, "| %s | %d | %s | %.2f | %.2f–%.2f (%d rounds) | ≥ %.2f | %s |\n",
			p.Name, p.G, of, p.Median, p.Lo, p.Hi, len(p.Ratios), p.Min, verdict)
	}
	b.WriteString("\n")
}
