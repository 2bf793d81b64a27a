package client

import "time"

// candidate is what pick knows of one address.
type candidate struct {
	// inFlight is how many attempts are on the address now.
	inFlight int64
	// weight is its warm-up weight, in [warmFloor, 1]; 1 without WarmUp.
	weight float64
	// passedOver is set for passOver after a dial to it failed or its
	// connection was lost.
	passedOver bool
	// previous marks the address of the call's attempt before, which a
	// retry does not go back to while another may be taken.
	previous bool
}

// draws are pick's random numbers, passed in so that a test can choose
// them: intN returns a uniform int in [0, n), and coin is uniform in
// [0, 1).
type draws struct {
	intN func(n int) int
	coin float64
}

// pick is the balancers' decision (see POLICY.md, "Load balancing"):
// which of cs the next attempt goes to, given the round robin's counter
// next. It returns an index into cs, or -1 when cs is empty.
//
// The addresses it chooses among are those neither passed over nor the
// previous attempt's; if there are none, those not passed over; if still
// none, all of them: a client all of whose servers failed a moment ago
// still tries one rather than fail without sending.
func pick(policy Balancer, cs []candidate, next uint64, d draws) int {
	idx := eligible(cs)
	switch {
	case len(idx) == 0:
		return -1
	case len(idx) == 1:
		return idx[0]
	}
	switch policy {
	case P2C:
		return p2c(cs, idx, next, d)
	case RoundRobin:
		return roundRobin(cs, idx, next, d)
	}
	return idx[0] // pick_first: the first, in the order listed
}

// eligible returns the indexes of cs pick may choose among.
func eligible(cs []candidate) []int {
	idx := make([]int, 0, len(cs))
	for _, tier := range []func(candidate) bool{
		func(c candidate) bool { return !c.passedOver && !c.previous },
		func(c candidate) bool { return !c.passedOver },
		func(candidate) bool { return true },
	} {
		for i, c := range cs {
			if tier(c) {
				idx = append(idx, i)
			}
		}
		if len(idx) > 0 {
			return idx
		}
	}
	return idx
}

// roundRobin takes the eligible address at or after next (in the order
// listed, wrapping around). One still warming up is taken with the
// probability of its weight; otherwise the eligible one after it is.
func roundRobin(cs []candidate, idx []int, next uint64, d draws) int {
	n := uint64(len(cs))
	for k := range n {
		i := int((next + k) % n)
		for j, e := range idx {
			if e != i {
				continue
			}
			if d.coin >= cs[i].weight {
				return idx[(j+1)%len(idx)]
			}
			return i
		}
	}
	return idx[0]
}

// p2c is the power of two choices: of two distinct eligible addresses
// drawn at random, the one with the lower (in flight + 1) / weight wins,
// the first drawn on a tie. A winner still warming up is taken only with
// the probability of its weight, otherwise the other is: under a light
// load every address has nothing in flight, and the score alone would
// let a warming server in at once.
func p2c(cs []candidate, idx []int, _ uint64, d draws) int {
	a := d.intN(len(idx))
	b := d.intN(len(idx) - 1)
	if b >= a {
		b++
	}
	i, j := idx[a], idx[b]
	score := func(c candidate) float64 { return float64(c.inFlight+1) / c.weight }
	if score(cs[j]) < score(cs[i]) {
		i, j = j, i
	}
	if d.coin >= cs[i].weight {
		return j
	}
	return i
}

// warmFloor is the weight of an address just (re)dialed, with WarmUp.
const warmFloor = 0.1

// warmWeight is the weight of an address whose connection was dialed
// since ago, ramping linearly from warmFloor to 1 over warmUp.
func warmWeight(since, warmUp time.Duration) float64 {
	if since >= warmUp {
		return 1
	}
	return warmFloor + (1-warmFloor)*float64(max(since, 0))/float64(warmUp)
}
