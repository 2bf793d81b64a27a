package timeline

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/trace"
)

// traceLine1 is a line of a client trace as scenarios write it.
const traceLine1 = `{"client":1,"call":1,"attempt":1,"method":"debit","key":"k1","id":1,"start":"2026-12-01T02:35:21.3735Z","end":"2026-12-01T02:35:21.6736Z","outcome":"TIMEOUT","class":"OUTCOME_UNKNOWN","status":"","budget_ms":299,"backoff_ms":16,"addr":"127.0.0.1:1","err":"context deadline exceeded"}`

var t0 = time.Date(2026, 12, 1, 2, 35, 0, 0, time.UTC)

func ev(ms int, name string, attrs map[string]any) serverapi.Event {
	if attrs == nil {
		attrs = map[string]any{}
	}
	return serverapi.Event{Time: t0.Add(time.Duration(ms) * time.Millisecond), Name: name, Attrs: attrs}
}

// TestServerLaneControl: events of control connections are faded, their
// CONN_ROLE folded into CONN_OPEN, and a restarted server's connection
// numbers are told apart from the first run's.
func TestServerLaneControl(t *testing.T) {
	events := []serverapi.Event{
		ev(0, serverapi.EventListen, nil),
		ev(1, serverapi.EventConnOpen, map[string]any{"conn": 1.0}),
		ev(2, serverapi.EventConnOpen, map[string]any{"conn": 2.0}),
		ev(3, serverapi.EventConnRole, map[string]any{"conn": 2.0, "role": "control"}),
		ev(4, serverapi.EventExec, map[string]any{"conn": 1.0, "id": 7.0, "method": "debit", "key": "", "status": "OK"}),
		ev(5, serverapi.EventExec, map[string]any{"conn": 2.0, "id": 7.0, "method": "get"}),
		ev(6, serverapi.EventCrash, map[string]any{"point": "after-commit"}),
		{Name: serverapi.EventTorn, Attrs: map[string]any{"text": `{"time":`}},
		ev(8, serverapi.EventListen, nil),
		ev(9, serverapi.EventConnOpen, map[string]any{"conn": 2.0}),
		ev(10, serverapi.EventDedupHit, map[string]any{"id": 1048576.0, "key": "k"}),
	}
	lane, note := serverLane("server 1", serverLog{Source: "server-x.log", Events: events}, t0, 10, DefaultOptions())
	if note != "" {
		t.Errorf("note %q, want none", note)
	}
	want := []Mark{
		{T: 0, Row: RowServer, Name: "LISTEN"},
		{T: 1, Row: RowConn, Name: "CONN_OPEN", Text: "conn=1"},
		{T: 2, Row: RowConn, Name: "CONN_OPEN", Control: true, Text: "conn=2 role=control"},
		{T: 4, Row: RowRequest, Name: "EXEC", ID: 7, Text: "conn=1 id=7 method=debit status=OK"},
		{T: 5, Row: RowRequest, Name: "EXEC", ID: 7, Control: true, Text: "conn=2 id=7 method=get"},
		{T: 6, Row: RowServer, Name: "CRASH", Text: "point=after-commit"},
		{T: 6, Row: RowServer, Name: "TORN", Text: `text={"time":`},
		{T: 8, Row: RowServer, Name: "LISTEN"},
		{T: 9, Row: RowConn, Name: "CONN_OPEN", Text: "conn=2"},
		{T: 10, Row: RowRequest, Name: "DEDUP_HIT", ID: 1048576, Text: "id=1048576 key=k"},
	}
	if diff := cmp.Diff(want, lane.Marks); diff != "" {
		t.Errorf("marks (-want +got):\n%s", diff)
	}
}

// TestCapMarks: past MaxMarks, the commonest names are counted per slice
// and the rare ones stay drawn.
func TestCapMarks(t *testing.T) {
	var marks []Mark
	for i := range 100 {
		marks = append(marks, Mark{T: float64(i), Row: RowRequest, Name: "EXEC"})
		if i%2 == 0 {
			marks = append(marks, Mark{T: float64(i), Row: RowRequest, Name: "QUEUE_FULL"})
		}
	}
	marks = append(marks, Mark{T: 50, Row: RowServer, Name: "CRASH"}, Mark{T: 99.9, Row: RowRequest, Name: "EXPIRED"})
	o := Options{MaxMarks: 60, Buckets: 10, MaxRows: 4}

	kept, dens, note := capMarks(marks, 100, o)
	if got := names(kept); got != "CRASH EXPIRED QUEUE_FULL*50" {
		t.Errorf("kept %s, want CRASH EXPIRED QUEUE_FULL*50", got)
	}
	if len(dens) != 1 || dens[0].Name != "EXEC" || dens[0].Total != 100 || dens[0].Row != RowRequest || dens[0].Width != 10 {
		t.Fatalf("densities %+v, want one of EXEC, total 100, width 10", dens)
	}
	if diff := cmp.Diff([]int{10, 10, 10, 10, 10, 10, 10, 10, 10, 10}, dens[0].Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if want := "152 events, more than the 60 drawn one by one: 100 EXEC drawn as counts per 1/10 of the axis"; note != want {
		t.Errorf("note %q, want %q", note, want)
	}

	kept, dens, note = capMarks(marks[:10], 100, o)
	if len(kept) != 10 || len(dens) != 0 || note != "" {
		t.Errorf("under the cap: %d kept, %d densities, note %q; want all kept", len(kept), len(dens), note)
	}
}

// names summarizes marks as "NAME" or "NAME*count", sorted.
func names(marks []Mark) string {
	count := map[string]int{}
	for _, m := range marks {
		count[m.Name]++
	}
	var out []string
	for n, c := range count {
		if c > 1 {
			n += fmt.Sprintf("*%d", c)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func TestPack(t *testing.T) {
	bars := []Bar{
		{Start: 0, End: 10, Backoff: 5}, // row 0 until 15
		{Start: 2, End: 4},              // row 1
		{Start: 4, End: 6},              // row 1 again: free at 4
		{Start: 5, End: 20},             // row 2
		{Start: 15, End: 16},            // row 0: its backoff ended at 15
		{Start: 5.5, End: 7},            // rows full (max 3): the first to free up, row 1 (6)
	}
	rows, overlapped := pack(bars, 3)
	var got []int
	for _, b := range bars {
		got = append(got, b.Row)
	}
	if diff := cmp.Diff([]int{0, 1, 1, 2, 0, 1}, got); diff != "" || rows != 3 || !overlapped {
		t.Errorf("rows %v (-want +got):\n%s rows=%d overlapped=%v, want 3 rows, overlapped", got, diff, rows, overlapped)
	}
}

// TestClientLaneCap: past MaxMarks attempts, the unknown outcomes and
// failures are drawn and the rest counted on a row of their own.
func TestClientLaneCap(t *testing.T) {
	var attempts []trace.Record
	for i := range 10 {
		a := trace.Record{Client: 3, Call: i + 1, Attempt: 1, Start: t0.Add(time.Duration(i) * time.Millisecond), End: t0.Add(time.Duration(i)*time.Millisecond + 500*time.Microsecond),
			Outcome: client.OutcomeResponse, Class: client.ClassFinal, Status: "OK"}
		if i == 7 {
			a.Outcome, a.Class, a.Status = client.OutcomeTimeout, client.ClassUnknown, ""
		}
		if i == 8 {
			a.Status = "APP_ERROR"
		}
		attempts = append(attempts, a)
	}
	lane, notes := clientLane(3, attempts, t0, 10, Options{MaxMarks: 4, Buckets: 5, MaxRows: 2})
	var calls []int
	for _, b := range lane.Bars {
		calls = append(calls, b.Call)
	}
	if diff := cmp.Diff([]int{1, 2, 8, 9}, calls); diff != "" {
		t.Errorf("calls drawn (-want +got):\n%s", diff)
	}
	if !lane.Bars[2].Unknown {
		t.Errorf("call 8's bar not marked unknown")
	}
	if len(lane.Densities) != 1 || lane.Densities[0].Total != 6 || lane.Densities[0].Row != 1 {
		t.Errorf("densities %+v, want one of 6 attempts on row 1", lane.Densities)
	}
	if diff := cmp.Diff([]string{"", "more"}, lane.Rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "client 3: 10 attempts, more than the 4 drawn") {
		t.Errorf("notes %q", notes)
	}
}

// TestBuild: one axis from the first event or attempt to the last
// attempt's backoff; servers first, then clients by number.
func TestBuild(t *testing.T) {
	logs := []serverLog{
		{Source: "server-x.log", Events: []serverapi.Event{ev(5, serverapi.EventListen, nil), ev(20, serverapi.EventSignal, nil)}},
		{Source: "server-x-2.log", Events: []serverapi.Event{ev(10, serverapi.EventListen, nil)}},
	}
	attempts := []trace.Record{
		{Client: 2, Attempt: 1, Call: 1, Start: t0.Add(2 * time.Millisecond), End: t0.Add(3 * time.Millisecond), Class: client.ClassNotSent},
		{Client: 1, Attempt: 1, Call: 1, Start: t0.Add(6 * time.Millisecond), End: t0.Add(25 * time.Millisecond), BackoffMs: 7, Class: client.ClassUnknown},
	}
	tl := build(logs, attempts, true, DefaultOptions())
	if !tl.Start.Equal(t0.Add(2*time.Millisecond)) || tl.Span != 30 {
		t.Errorf("start %v span %v, want %v and 30", tl.Start, tl.Span, t0.Add(2*time.Millisecond))
	}
	var lanes []string
	for _, l := range tl.Lanes {
		lanes = append(lanes, l.Name+" "+l.Source)
	}
	if diff := cmp.Diff([]string{"server 1 server-x.log", "server 2 server-x-2.log", "client 1 ", "client 2 "}, lanes); diff != "" {
		t.Errorf("lanes (-want +got):\n%s", diff)
	}
	if b := tl.Lanes[2].Bars[0]; b.Start != 4 || b.End != 23 || b.Backoff != 7 || !b.Unknown {
		t.Errorf("client 1's bar %+v, want 4..23 ms, backoff 7, unknown", b)
	}
	if tl.Events != 3 || tl.Attempts != 2 || !tl.Traced {
		t.Errorf("events %d attempts %d traced %v, want 3, 2, true", tl.Events, tl.Attempts, tl.Traced)
	}
}

// TestServerLaneDensityRows: each name counted per slice has its own row.
func TestServerLaneDensityRows(t *testing.T) {
	var events []serverapi.Event
	for i := range 30 {
		events = append(events, ev(i, serverapi.EventExec, nil), ev(i, serverapi.EventQueueFull, nil))
	}
	events = append(events, ev(30, serverapi.EventCrash, nil))
	lane, note := serverLane("server 1", serverLog{Source: "server-x.log", Events: events}, t0, 30, Options{MaxMarks: 10, Buckets: 3, MaxRows: 1})
	if diff := cmp.Diff([]string{"connections", "requests", "server", "EXEC per slice", "QUEUE_FULL per slice"}, lane.Rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if len(lane.Densities) != 2 || lane.Densities[0].Row != 3 || lane.Densities[1].Row != 4 || len(lane.Marks) != 1 {
		t.Errorf("densities %+v, marks %+v; want EXEC on row 3, QUEUE_FULL on row 4, the CRASH drawn", lane.Densities, lane.Marks)
	}
	if !strings.HasPrefix(note, "server 1 (server-x.log): 61 events") {
		t.Errorf("note %q", note)
	}
	if diff := cmp.Diff([]string{"connections", "requests", "server"}, serverRows); diff != "" {
		t.Errorf("serverRows changed (-want +got):\n%s", diff)
	}
}
