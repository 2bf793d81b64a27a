package chaos

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Nemesis kinds: what a nemesis event does.
const (
	// The server's own faults, switched on with ctl.fault and off with
	// ctl.clear.
	NemLate        = "late"
	NemNoReply     = "noreply"
	NemClose       = "close"
	NemPartial     = "partial"
	NemBadMagic    = "badmagic"
	NemUnavailable = "unavailable"
	NemSleep       = "sleep"
	// NemKill makes a server execute debits without answering for
	// KillSilence, as answers in flight are lost in a crash, then
	// SIGKILLs it and restarts it on the same store and address.
	NemKill = "kill"
	// NemDrain drains a server (SIGTERM: it answers what it took, and
	// clients re-send what it did not), waits for it to exit, and
	// restarts it on the same store and address after the event's For.
	NemDrain = "drain"
	// NemRolling drains and restarts every server in turn, as a rolling
	// restart does: the next is drained once the one before listens
	// again, For after it exited.
	NemRolling = "rolling"
	// NemPause stops a server with SIGSTOP and resumes it with SIGCONT.
	NemPause = "pause"
	// NemCut cuts every client's connections.
	NemCut = "cut"
	// NemLie makes a server execute every debit and answer it
	// UNAVAILABLE, which says it did not: the server's fault
	// unavailable_after_exec, for as long as the event lasts. A correct
	// client cannot survive a server that lies, so this kind is for the
	// negative control of the checkers alone: "all" leaves it out.
	NemLie = "unavailable_after_exec"
)

// NemesisKinds lists every kind, in the order a schedule draws from.
var NemesisKinds = []string{NemLate, NemNoReply, NemClose, NemPartial, NemBadMagic, NemUnavailable, NemSleep, NemKill, NemPause, NemCut, NemLie, NemDrain, NemRolling}

// restarts are the kinds that restart a server, which the in-memory
// store cannot survive: a restarted in-memory server forgets everything.
var restarts = []string{NemKill, NemDrain, NemRolling}

// honestKinds are the kinds of "all": every one but NemLie.
func honestKinds() []string {
	return slices.DeleteFunc(slices.Clone(NemesisKinds), func(k string) bool { return k == NemLie })
}

// Event is one nemesis action of a schedule.
type Event struct {
	// At is when it starts, from the workload's start.
	At   time.Duration
	Kind string
	// Server is the index of the server it hits; unused by NemCut and
	// NemRolling, which hit every one.
	Server int
	// For is how long the fault lasts: the fault rule stays on, the
	// server stays down or stopped, for this long; for NemRolling, how
	// long each server stays down between its exit and its restart.
	For time.Duration
	// Rule is the ctl.fault rule of a server fault.
	Rule string
}

func (e Event) String() string {
	s := fmt.Sprintf("at=%v kind=%s", e.At, e.Kind)
	if e.Kind != NemCut && e.Kind != NemRolling {
		s += fmt.Sprintf(" server=%d", e.Server)
	}
	if e.For > 0 {
		s += fmt.Sprintf(" for=%v", e.For)
	}
	if e.Rule != "" {
		s += " rule=[" + e.Rule + "]"
	}
	return s
}

// Schedule is the nemesis's plan: a pure function of the seed and the
// options, so the same seed gives the same schedule. The run's own timing
// is not deterministic: which operations a fault meets varies.
func Schedule(o Options) []Event {
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x6e656d65736973))
	kinds := o.kinds()
	var evs []Event
	if len(kinds) == 0 {
		return nil
	}
	// Leave the last half second fault-free, so that the run ends with
	// every server up and answering.
	end := o.Duration - 500*time.Millisecond
	ms := func(lo, span int64) time.Duration { return time.Duration(lo+rng.Int64N(span)) * time.Millisecond }
	at := ms(200, 300)
	for at < end {
		e := Event{At: at, Kind: kinds[rng.IntN(len(kinds))], Server: rng.IntN(o.Servers)}
		switch e.Kind {
		case NemKill, NemDrain:
			e.For = ms(50, 250)
		case NemRolling:
			e.Server = 0
			e.For = ms(50, 200)
		case NemPause:
			e.For = ms(100, 500)
		case NemCut:
			e.Server = 0
		default:
			e.For = ms(100, 400)
			e.Rule = faultRule(rng, e.Kind)
		}
		evs = append(evs, e)
		// One fault at a time per schedule step; the next starts after
		// this one ends plus a pause.
		at += e.For + ms(150, 450)
	}
	return evs
}

// faultRule draws a ctl.fault rule of kind: which method, how many
// requests, how late or slow.
func faultRule(rng *rand.Rand, kind string) string {
	if kind == NemLie {
		// Every debit while it lasts: a keyed debit's retries must meet
		// the lie too, or the first retry is replayed OK and the lie
		// leaves no trace in the history.
		return "kind=" + kind + " method=debit"
	}
	methods := []string{"", "get", "debit"}
	r := "kind=" + kind
	if m := methods[rng.IntN(len(methods))]; m != "" {
		r += " method=" + m
	}
	r += fmt.Sprintf(" count=%d", 1+rng.IntN(5))
	switch kind {
	case NemLate:
		r += fmt.Sprintf(" delay=%dms", 50+rng.IntN(200))
	case NemSleep:
		r += fmt.Sprintf(" delay=%dms", 100+rng.IntN(400))
	}
	return r
}

// Digest is a short hash of a schedule, for comparing runs.
func Digest(evs []Event) string {
	h := fnv.New64a()
	for _, e := range evs {
		fmt.Fprintln(h, e.String())
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// kinds returns the nemesis kinds the options enable.
func (o Options) kinds() []string {
	if len(o.Faults) == 0 {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(NemesisKinds), func(k string) bool { return !slices.Contains(o.Faults, k) })
}

// ParseFaults reads a comma-separated list of nemesis kinds; "all" is
// every kind but NemLie, which must be named.
func ParseFaults(s string) ([]string, error) {
	if s == "all" {
		return honestKinds(), nil
	}
	if s == "" || s == "none" {
		return nil, nil
	}
	var out []string
	for _, k := range strings.Split(s, ",") {
		if !slices.Contains(NemesisKinds, k) {
			return nil, fmt.Errorf("unknown fault %q: want some of %s, all or none", k, strings.Join(NemesisKinds, ","))
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}
