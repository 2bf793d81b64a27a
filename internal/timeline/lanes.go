package timeline

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rpcbench/rpcbench/internal/client"
	"github.com/rpcbench/rpcbench/internal/proto"
	"github.com/rpcbench/rpcbench/internal/serverapi"
	"github.com/rpcbench/rpcbench/internal/trace"
)

// serverLog is one server's decoded log.
type serverLog struct {
	// Source is the log's file name.
	Source string
	Events []serverapi.Event
}

// eventRows places each event name on a server lane's row; a name not
// listed goes on RowServer.
var eventRows = map[string]int{
	serverapi.EventConnOpen:           RowConn,
	serverapi.EventConnClosed:         RowConn,
	serverapi.EventConnReadError:      RowConn,
	serverapi.EventConnClosedMidFrame: RowConn,
	serverapi.EventConnCloseInjected:  RowConn,
	serverapi.EventConnRole:           RowConn,
	serverapi.EventSockoptError:       RowConn,
	serverapi.EventAcceptError:        RowConn,
	serverapi.EventWriteTimeout:       RowConn,
	serverapi.EventProtocolError:      RowConn,
	serverapi.EventExec:               RowRequest,
	serverapi.EventExpired:            RowRequest,
	serverapi.EventFault:              RowRequest,
	serverapi.EventDedupHit:           RowRequest,
	serverapi.EventDedupWaitExpired:   RowRequest,
	serverapi.EventClaim:              RowRequest,
	serverapi.EventKeyConflict:        RowRequest,
	serverapi.EventQueueFull:          RowRequest,
	serverapi.EventStoreError:         RowRequest,
}

var serverRows = []string{RowConn: "connections", RowRequest: "requests", RowServer: "server"}

// build lays out one scenario's server logs and client attempts on one
// time axis. traced says whether a client trace was found, even an empty
// one.
func build(logs []serverLog, attempts []trace.Record, traced bool, o Options) *Timeline {
	start, end := bounds(logs, attempts)
	tl := &Timeline{Start: start, Span: math.Max(ms(end.Sub(start)), 1), Traced: traced, Notes: []string{}}
	for i, l := range logs {
		lane, note := serverLane(fmt.Sprintf("server %d", i+1), l, start, tl.Span, o)
		tl.Lanes = append(tl.Lanes, lane)
		tl.Events += len(l.Events)
		if note != "" {
			tl.Notes = append(tl.Notes, note)
		}
	}
	byClient := map[int][]trace.Record{}
	for _, a := range attempts {
		byClient[a.Client] = append(byClient[a.Client], a)
	}
	clients := make([]int, 0, len(byClient))
	for c := range byClient {
		clients = append(clients, c)
	}
	slices.Sort(clients)
	for _, c := range clients {
		lane, notes := clientLane(c, byClient[c], start, tl.Span, o)
		tl.Lanes = append(tl.Lanes, lane)
		tl.Notes = append(tl.Notes, notes...)
	}
	tl.Attempts = len(attempts)
	return tl
}

// bounds returns the first and last instant of the logs and attempts,
// backoffs included. Events without a time (a torn line) do not count.
func bounds(logs []serverLog, attempts []trace.Record) (start, end time.Time) {
	see := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if start.IsZero() || t.Before(start) {
			start = t
		}
		if t.After(end) {
			end = t
		}
	}
	for _, l := range logs {
		for _, e := range l.Events {
			see(e.Time)
		}
	}
	for _, a := range attempts {
		see(a.Start)
		see(a.End.Add(time.Duration(a.BackoffMs) * time.Millisecond))
	}
	return start, end
}

// ms returns d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// serverLane turns one server's events into marks. Events of control
// connections are marked Control; a CONN_ROLE declaring one is folded
// into its CONN_OPEN. A torn line (a server killed mid-write) is placed
// at the event before it. Past o.MaxMarks, the commonest names become
// densities, each on a row of its own, and the returned note says which.
func serverLane(name string, l serverLog, start time.Time, span float64, o Options) (Lane, string) {
	control := controlConns(l.Events)
	lane := Lane{Kind: LaneServer, Name: name, Source: l.Source, Rows: serverRows, Marks: []Mark{}, Bars: []Bar{}, Densities: []Density{}}
	incarnation, last := 0, start
	for _, e := range l.Events {
		if e.Name == serverapi.EventListen {
			incarnation++
		}
		at := e.Time
		if at.IsZero() {
			at = last
		}
		last = at
		conn, hasConn := e.Int(serverapi.KeyConn)
		ctl := hasConn && control[connRef{incarnation, conn}]
		if e.Name == serverapi.EventConnRole && ctl {
			continue
		}
		text := attrText(e)
		if ctl && e.Name == serverapi.EventConnOpen {
			text += " role=control"
		}
		m := Mark{T: ms(at.Sub(start)), Row: rowOf(e.Name), Name: e.Name, Control: ctl, Text: text}
		if id, ok := e.Int(serverapi.KeyID); ok && id > 0 {
			m.ID = uint64(id)
		}
		lane.Marks = append(lane.Marks, m)
	}
	var note string
	lane.Marks, lane.Densities, note = capMarks(lane.Marks, span, o)
	if note != "" {
		note = name + " (" + l.Source + "): " + note
	}
	// Each name counted per slice gets a row of its own below the
	// others, so that two densities never hide each other.
	if len(lane.Densities) > 0 {
		lane.Rows = slices.Clone(serverRows)
		for i := range lane.Densities {
			lane.Densities[i].Row = len(lane.Rows)
			lane.Rows = append(lane.Rows, lane.Densities[i].Name+" per slice")
		}
	}
	return lane, note
}

func rowOf(event string) int {
	if r, ok := eventRows[event]; ok {
		return r
	}
	return RowServer
}

// connRef names a connection across a log that holds several runs of a
// server (a crash and a restart append to one log): each LISTEN starts
// its numbering again.
type connRef struct {
	incarnation int
	conn        int64
}

// controlConns returns the connections that declared the control role.
func controlConns(events []serverapi.Event) map[connRef]bool {
	out := map[connRef]bool{}
	incarnation := 0
	for _, e := range events {
		switch e.Name {
		case serverapi.EventListen:
			incarnation++
		case serverapi.EventConnRole:
			if c, ok := e.Int(serverapi.KeyConn); ok && e.Text(serverapi.KeyRole) == serverapi.RoleControl {
				out[connRef{incarnation, c}] = true
			}
		}
	}
	return out
}

// attrText renders an event's attributes as "k=v ..." sorted by key,
// leaving out empty text; numbers are written in full, never with an
// exponent.
func attrText(e serverapi.Event) string {
	keys := make([]string, 0, len(e.Attrs))
	for k := range e.Attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		var v string
		switch x := e.Attrs[k].(type) {
		case string:
			v = x
		case float64:
			v = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			v = fmt.Sprint(x)
		}
		if v == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k + "=" + v)
	}
	return b.String()
}

// capMarks returns marks unchanged when there are at most o.MaxMarks.
// Otherwise it keeps every mark of the rarest names that fit in
// o.MaxMarks together and counts the other names per slice of the axis,
// so that rare events (a CRASH, an EXPIRED) stay visible among
// thousands of EXECs.
func capMarks(marks []Mark, span float64, o Options) ([]Mark, []Density, string) {
	if len(marks) <= o.MaxMarks {
		return marks, []Density{}, ""
	}
	count := map[string]int{}
	for _, m := range marks {
		count[m.Name]++
	}
	names := make([]string, 0, len(count))
	for n := range count {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(count[a], count[b]), cmp.Compare(a, b))
	})
	drawn, kept := 0, map[string]bool{}
	for _, n := range names {
		if drawn+count[n] > o.MaxMarks {
			break
		}
		drawn += count[n]
		kept[n] = true
	}
	var out []Mark
	dens := map[string]*Density{}
	var order []string
	for _, m := range marks {
		if kept[m.Name] {
			out = append(out, m)
			continue
		}
		d := dens[m.Name]
		if d == nil {
			d = newDensity(m.Name, m.Row, span, o.Buckets)
			dens[m.Name] = d
			order = append(order, m.Name)
		}
		d.add(m.T)
	}
	var ds []Density
	var parts []string
	for _, n := range order {
		ds = append(ds, *dens[n])
		parts = append(parts, fmt.Sprintf("%d %s", count[n], n))
	}
	note := fmt.Sprintf("%d events, more than the %d drawn one by one: %s drawn as counts per 1/%d of the axis",
		len(marks), o.MaxMarks, strings.Join(parts, ", "), o.Buckets)
	return out, ds, note
}

func newDensity(name string, row int, span float64, buckets int) *Density {
	return &Density{Name: name, Row: row, Width: span / float64(buckets), Counts: make([]int, buckets)}
}

func (d *Density) add(t float64) {
	i := min(max(int(t/d.Width), 0), len(d.Counts)-1)
	d.Counts[i]++
	d.Total++
}

// clientLane turns one client's attempts into bars stacked so that
// overlapping attempts (concurrent calls) do not hide each other. Past
// o.MaxMarks attempts, those of unknown outcome and those not answered
// OK are drawn first, and the rest are counted per slice on a row of
// their own.
func clientLane(n int, attempts []trace.Record, start time.Time, span float64, o Options) (Lane, []string) {
	name := fmt.Sprintf("client %d", n)
	lane := Lane{Kind: LaneClient, Name: name, Marks: []Mark{}, Densities: []Density{}}
	bars := make([]Bar, 0, len(attempts))
	for _, a := range attempts {
		bars = append(bars, Bar{
			Start: ms(a.Start.Sub(start)), End: ms(a.End.Sub(start)), Backoff: float64(a.BackoffMs),
			Client: a.Client, Call: a.Call, Attempt: a.Attempt, ID: a.ID,
			Method: a.Method, Key: a.Key, Outcome: a.Outcome.String(), Class: a.Class.String(), Status: a.Status,
			Budget: int(a.BudgetMs), Addr: a.Addr, Err: a.Err, Unknown: a.Unknown(),
		})
	}
	var notes []string
	var rest []Bar
	if len(bars) > o.MaxMarks {
		// Stable, so that among equals the earlier attempt is drawn.
		slices.SortStableFunc(bars, func(a, b Bar) int { return cmp.Compare(barRank(a), barRank(b)) })
		bars, rest = bars[:o.MaxMarks], bars[o.MaxMarks:]
		notes = append(notes, fmt.Sprintf("%s: %d attempts, more than the %d drawn one by one: the unknown outcomes and failures are drawn, and %d other attempts are counted per 1/%d of the axis on the last row",
			name, len(attempts), o.MaxMarks, len(rest), o.Buckets))
	}
	slices.SortStableFunc(bars, func(a, b Bar) int { return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End)) })
	rows, overlapped := pack(bars, o.MaxRows)
	if overlapped {
		notes = append(notes, fmt.Sprintf("%s: more than %d attempts at once; some bars overlap", name, o.MaxRows))
	}
	lane.Bars = bars
	lane.Rows = make([]string, rows)
	if len(rest) > 0 {
		d := newDensity("attempts", rows, span, o.Buckets)
		for _, b := range rest {
			d.add(b.Start)
		}
		lane.Densities = append(lane.Densities, *d)
		lane.Rows = append(lane.Rows, "more")
	}
	if len(lane.Rows) == 0 {
		lane.Rows = []string{""}
	}
	return lane, notes
}

// barRank orders attempts for drawing when not all can be: unknown
// outcomes, then other answers than OK, then the rest.
func barRank(b Bar) int {
	switch {
	case b.Unknown:
		return 0
	case b.Class != client.ClassFinal.String() || b.Status != proto.StatusOK.String():
		return 1
	default:
		return 2
	}
}

// pack assigns each bar, sorted by start, the first row free at its
// start (a bar occupies its row until its backoff ends), opening rows up
// to maxRows; past that a bar takes the row that frees up first, and
// overlapped is true. It returns the rows used.
func pack(bars []Bar, maxRows int) (rows int, overlapped bool) {
	var free []float64 // free[r]: when row r's last bar and backoff end
	for i := range bars {
		b := &bars[i]
		r := slices.IndexFunc(free, func(end float64) bool { return end <= b.Start })
		if r < 0 {
			if len(free) < maxRows {
				free = append(free, 0)
				r = len(free) - 1
			} else {
				r = 0
				for j := range free {
					if free[j] < free[r] {
						r = j
					}
				}
				overlapped = true
			}
		}
		b.Row = r
		free[r] = b.End + b.Backoff
	}
	return len(free), overlapped
}
