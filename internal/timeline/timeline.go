// Package timeline renders an evidence directory as one self-contained
// HTML page of its scenarios' verdicts, fields and timelines.
//
// Load reads the directory into a Page; Render writes the page. A
// scenario's timeline puts on one time axis a lane per server (the
// events of logs/server-NAME.log, server-NAME-2.log, ...) and a lane per
// client (the attempts of logs/trace-NAME.jsonl, one JSON object per
// attempt; see Attempt). The page needs no network: its CSS, its script
// and its data are inline, and the script draws the timelines as SVG.
package timeline

import (
	"time"

	"github.com/rpcbench/rpcbench/internal/scorecard"
)

// Options bound what one page holds.
type Options struct {
	// MaxMarks is the most events drawn one by one on a server lane, and
	// the most attempts drawn as bars on a client lane. Past it, the
	// commonest event names (or the attempts beyond it) are drawn as
	// counts per slice of the time axis instead, and the page says so.
	// Zero means DefaultOptions' value.
	MaxMarks int
	// Buckets is how many slices of the time axis such counts use. Zero
	// means DefaultOptions' value.
	Buckets int
	// MaxRows is the most rows a client lane stacks overlapping attempts
	// in; past it, attempts share the row that frees up first and
	// overlap. Zero means DefaultOptions' value.
	MaxRows int
}

// DefaultOptions returns the options rpcbench report uses: 2000 marks per
// lane, 300 slices, 16 rows.
func DefaultOptions() Options { return Options{MaxMarks: 2000, Buckets: 300, MaxRows: 16} }

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.MaxMarks <= 0 {
		o.MaxMarks = d.MaxMarks
	}
	if o.Buckets <= 0 {
		o.Buckets = d.Buckets
	}
	if o.MaxRows <= 0 {
		o.MaxRows = d.MaxRows
	}
	return o
}

// Page is an evidence directory ready to render.
type Page struct {
	// Dir is the evidence directory as it was named.
	Dir string
	// Env is the content of env.txt; "" when there is none.
	Env string
	// Summary is report.Summary ("N passed, M failed[, ...]") over
	// every scenario.
	Summary string
	// Failing counts the scenarios that did not run as their pins say
	// (not PASS, FINDING or N/A), skipped ones included.
	Failing int
	// Scenarios are those that did not pass first (FAIL and ERROR, then
	// INTERRUPTED, then SKIP), then the findings, then n/a, then those
	// that passed; within each, in
	// output.txt's order.
	Scenarios []Scenario
	// Warnings name what could not be read (a log, a trace) and so is
	// missing from the page, in the order found.
	Warnings []string
	// Scorecard is the grpc group's table (rpcbench scorecard), nil for
	// evidence without grpc cases.
	Scorecard *scorecard.Card
}

// Timelines counts the scenarios that have a timeline.
func (p *Page) Timelines() int {
	n := 0
	for _, s := range p.Scenarios {
		if s.Timeline != nil {
			n++
		}
	}
	return n
}

// Scenario is one CASE line and what its logs show.
type Scenario struct {
	Name string
	// Verdict is "PASS", "FINDING", "N/A", "FAIL", "ERROR",
	// "INTERRUPTED" or "SKIP".
	Verdict string
	// Anchor is the page-unique HTML id of the scenario's section.
	Anchor string
	// Why is the value of the field "why": what failed, or for SKIP what
	// is missing. "" when passed.
	Why string
	// Fields are the line's fields but "why", in line order.
	Fields []Field
	// Crosstalk is the value of a numeric field "crosstalk": answers the
	// scenario saw reach the wrong caller. 0 when absent.
	Crosstalk int
	// NoteKind is "no-server" (server-NAME.no-server.txt: the scenario
	// starts no server), "chaos" (NAME.chaos.txt: its logs were not kept)
	// or ""; Note is that file's text.
	NoteKind, Note string
	// Repeat is set on the second and later lines of a name that
	// output.txt holds more than once (--count): the logs hold every
	// run, so the timeline is drawn on the first line only.
	Repeat int
	// Timeline is nil when there is neither a server log nor a client
	// trace.
	Timeline *Timeline
	// Problems are this scenario's warnings.
	Problems []string
}

// Field is one field of a CASE line as the page shows it.
type Field struct {
	Key, Value string
	// Op is the operator written between key and value: "=", "==",
	// "<=", ">=", "~=" or ":=".
	Op string
	// Kind is report.Kind's name: "recorded", "asserted", "bound",
	// "lower-bound", "volatile" or "outcome".
	Kind string
}

// Timeline is one scenario's lanes on one time axis. Times are
// milliseconds after Start. It is the JSON the page's script draws.
type Timeline struct {
	Start time.Time `json:"start"`
	// Span is the axis' length, ms: the last event or attempt end (its
	// backoff included), at least 1.
	Span float64 `json:"span"`
	// Lanes are the servers in log order (server-NAME.log first), then
	// the clients by number.
	Lanes []Lane `json:"lanes"`
	// Traced is false when the scenario left no client trace.
	Traced bool `json:"traced"`
	// Events counts the server events read; Attempts the client attempts
	// read. Some may be summarized rather than drawn (Notes say which).
	Events   int `json:"events"`
	Attempts int `json:"attempts"`
	// Notes say, for people, what the page left out or summarized.
	Notes []string `json:"notes"`
}

// Lane kinds.
const (
	LaneServer = "server"
	LaneClient = "client"
)

// Server lane rows, top to bottom.
const (
	RowConn    = 0 // connections opened, closed, broken
	RowRequest = 1 // what happened to requests: EXEC, EXPIRED, DEDUP_HIT, ...
	RowServer  = 2 // the server's own life: LISTEN, FAULT_SET, CRASH, ...
)

// Lane is a server's events or a client's attempts.
type Lane struct {
	// Kind is LaneServer or LaneClient.
	Kind string `json:"kind"`
	// Name is "server 1", "server 2", ... or "client 1", ...
	Name string `json:"name"`
	// Source is the file the lane was read from.
	Source string `json:"source"`
	// Rows label the lane's rows, top to bottom; a client lane's rows
	// stack overlapping attempts and are unlabelled.
	Rows []string `json:"rows"`
	// Marks are a server's events drawn one by one.
	Marks []Mark `json:"marks"`
	// Bars are a client's attempts drawn one by one.
	Bars []Bar `json:"bars"`
	// Densities are events or attempts drawn as counts per slice.
	Densities []Density `json:"densities"`
}

// Mark is one server event.
type Mark struct {
	T   float64 `json:"t"`
	Row int     `json:"row"`
	// Name is the event name (serverapi.Event*).
	Name string `json:"name"`
	// ID is the request ID the event names; 0 when none.
	ID uint64 `json:"id,omitempty"`
	// Control is set on events of a connection that declared itself a
	// control connection (the scenario reading counters), not traffic
	// under test.
	Control bool `json:"ctl,omitempty"`
	// Text is the event's attributes, "k=v ..." sorted by key.
	Text string `json:"text"`
}

// Bar is one client attempt.
type Bar struct {
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	// Backoff is the pause after the attempt, ms; 0 if none.
	Backoff float64 `json:"backoff"`
	// Row is the lane row the attempt is stacked in.
	Row     int    `json:"row"`
	Client  int    `json:"client"`
	Call    int    `json:"call"`
	Attempt int    `json:"attempt"`
	ID      uint64 `json:"id"`
	Method  string `json:"method"`
	Key     string `json:"key"`
	Outcome string `json:"outcome"`
	Class   string `json:"class"`
	Status  string `json:"status"`
	Budget  int    `json:"budget"`
	Addr    string `json:"addr"`
	Err     string `json:"err"`
	// Unknown is set when the request may or may not have executed:
	// class OUTCOME_UNKNOWN, or an outcome that implies it.
	Unknown bool `json:"unknown"`
}

// Density is events of one name, or attempts, counted per slice of the
// time axis instead of drawn one by one.
type Density struct {
	// Name is the event name, or "attempts".
	Name string `json:"name"`
	Row  int    `json:"row"`
	// Total is the sum of Counts.
	Total int `json:"total"`
	// Width is one slice's length, ms; Counts[i] covers
	// [i*Width, (i+1)*Width).
	Width  float64 `json:"width"`
	Counts []int   `json:"counts"`
}
