// Package scorecard tabulates the grpc group's evidence: one row per
// (scenario, invariant), one column per (stack, configuration), each cell
// what the stack did: holds, violated, violated sometimes (a race its
// expectations file pins as such) or unsupported, and, for a case that
// did not pass, its verdict.
package scorecard

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rpcbench/rpcbench/internal/outcome"
	"github.com/rpcbench/rpcbench/internal/report"
)

// Column is one (stack, configuration).
type Column struct {
	Stack   string `json:"stack"`
	Config  string `json:"config"`
	Version string `json:"version,omitempty"`
}

func (c Column) String() string {
	if c.Version != "" {
		return c.Stack + " " + c.Version + " " + c.Config
	}
	return c.Stack + " " + c.Config
}

// Cell is what one column did on one row.
type Cell struct {
	// Outcome is what the column's stack did with the row's invariant;
	// none ("" in JSON) when the column did not run the row's scenario.
	Outcome outcome.Outcome `json:"outcome"`
	// Case is the CASE line's name, for a link to its timeline.
	Case string `json:"case"`
	// Verdict is the case's verdict; one that does not agree with the
	// stack's pins (Agrees) means the cell is not to be trusted as it
	// stands.
	Verdict string `json:"verdict"`
}

// Agrees reports whether the cell's case ended in a verdict that agrees
// with the stack's pins (report.Verdict.Agrees: PASS, FINDING, N/A), so
// that its outcome stands as shown.
func (cl Cell) Agrees() bool {
	v, ok := report.CaseVerdict(cl.Verdict)
	return ok && v.Agrees()
}

// Row is one (scenario, invariant).
type Row struct {
	Scenario  string `json:"scenario"`
	Invariant string `json:"invariant"`
	Cells     []Cell `json:"cells"`
}

// Card is the whole table.
type Card struct {
	Columns []Column `json:"columns"`
	Rows    []Row    `json:"rows"`
}

// Build tabulates lines, the CASE lines of a grpc group run: those with
// scenario, stack and config fields. Rows and columns come in the order
// they first appear. A line without them is left out; none at all is an
// error.
func Build(lines []report.Line) (Card, error) {
	var c Card
	type rowKey struct{ sc, inv string }
	rows := map[rowKey]int{}
	cols := map[[2]string]int{}
	type entry struct {
		row, col int
		cell     Cell
	}
	var entries []entry
	for _, l := range lines {
		f := map[string]string{}
		for _, fl := range l.Fields {
			f[fl.Key] = fl.Value
		}
		obs := l.Observations()
		sc, stack, config := f["scenario"], f["stack"], f["config"]
		if sc == "" || stack == "" || config == "" {
			continue
		}
		ck := [2]string{stack, config}
		ci, ok := cols[ck]
		if !ok {
			ci = len(c.Columns)
			cols[ck] = ci
			c.Columns = append(c.Columns, Column{Stack: stack, Config: config})
		}
		if v := f["version"]; v != "" {
			c.Columns[ci].Version = v
		}
		if len(obs) == 0 && l.Verdict.Agrees() {
			// A judged case that went as its pins say observed each of
			// its invariants (the scenario checks that it did): none
			// means output this scorecard cannot read.
			return c, fmt.Errorf("scorecard: CASE %s %s records no invariant as invariant:=outcome: output of an rpcbench that wrote them as ==? re-run it", l.Name, l.Verdict)
		}
		if len(obs) == 0 {
			// A case that stopped before observing anything (an ERROR, a
			// FAIL before its first observation) still shows, on a row
			// of its own.
			obs = []outcome.Observation{{Invariant: "-"}}
		}
		for _, o := range obs {
			rk := rowKey{sc, o.Invariant}
			ri, ok := rows[rk]
			if !ok {
				ri = len(c.Rows)
				rows[rk] = ri
				c.Rows = append(c.Rows, Row{Scenario: sc, Invariant: o.Invariant})
			}
			entries = append(entries, entry{ri, ci, Cell{Outcome: o.Outcome, Case: l.Name, Verdict: l.Verdict.String()}})
		}
	}
	if len(c.Columns) == 0 {
		return c, fmt.Errorf("scorecard: no grpc group CASE line (with scenario, stack and config fields)")
	}
	for i := range c.Rows {
		c.Rows[i].Cells = make([]Cell, len(c.Columns))
	}
	for _, e := range entries {
		c.Rows[e.row].Cells[e.col] = e.cell
	}
	// Rows grouped by scenario, in the order scenarios first appear.
	order := map[string]int{}
	for _, r := range c.Rows {
		if _, ok := order[r.Scenario]; !ok {
			order[r.Scenario] = len(order)
		}
	}
	slices.SortStableFunc(c.Rows, func(a, b Row) int { return order[a.Scenario] - order[b.Scenario] })
	return c, nil
}

// Text is a cell as the tables write it: VIOLATED stands out, an
// unsupported cell is "n/a", a missing one "-", and a case that did not
// pass adds its verdict.
func (cl Cell) Text() string {
	var s string
	switch cl.Outcome {
	case 0:
		s = "-"
	case outcome.Violated:
		s = "VIOLATED"
	case outcome.Sometimes:
		s = "VIOLATED " + outcome.Sometimes.String()
	case outcome.Unsupported:
		s = "n/a"
	default:
		s = cl.Outcome.String()
	}
	if cl.Verdict != "" && !cl.Agrees() {
		s += " (" + cl.Verdict + ")"
	}
	return s
}

// WriteMarkdown writes the card as a GitHub Markdown table, each cell
// linking to its case's section of the report page at page (such as
// "report.html"); page "" links nothing.
func (c Card) WriteMarkdown(w io.Writer, page string) error {
	var b strings.Builder
	b.WriteString("| scenario | invariant |")
	for _, col := range c.Columns {
		fmt.Fprintf(&b, " %s |", col)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(c.Columns)) + "\n")
	for _, r := range c.Rows {
		fmt.Fprintf(&b, "| `%s` | `%s` |", r.Scenario, r.Invariant)
		for _, cl := range r.Cells {
			fmt.Fprintf(&b, " %s |", mdCell(cl, page))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdCell is a cell as the Markdown tables write it: a broken outcome in
// bold, linking to its case on the report page at page, if any.
func mdCell(cl Cell, page string) string {
	t := cl.Text()
	if cl.Outcome.Broken() {
		t = "**" + t + "**"
	}
	if page != "" && cl.Case != "" {
		t = fmt.Sprintf("[%s](%s#case-%s)", t, page, cl.Case)
	}
	return t
}

// WriteJSON writes the card as indented JSON.
func (c Card) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}

// ByStack splits the card into one per stack other than the first
// column's (the reference), in the order they first appear, each with
// the reference columns first. A column whose every cell is n/a or
// missing is left out and named in the card's Unrun; a row with no cell
// left is dropped.
func (c Card) ByStack() []StackCard {
	if len(c.Columns) == 0 {
		return nil
	}
	ref := c.Columns[0].Stack
	var stacks []string
	for _, col := range c.Columns {
		if col.Stack != ref && !slices.Contains(stacks, col.Stack) {
			stacks = append(stacks, col.Stack)
		}
	}
	if len(stacks) == 0 {
		// One stack alone (a user's service, judged through rpcbench
		// proxy): its own card, with no reference beside it.
		return []StackCard{{Stack: ref, Version: c.Columns[0].Version, Card: c}}
	}
	var out []StackCard
	for _, st := range stacks {
		sc := StackCard{Stack: st}
		var keep []int
		for i, col := range c.Columns {
			switch {
			case col.Stack == ref:
				keep = append(keep, i)
			case col.Stack == st:
				if sc.Version == "" {
					sc.Version = col.Version
				}
				if c.runs(i) {
					keep = append(keep, i)
				} else {
					sc.Unrun = append(sc.Unrun, col.Config)
				}
			}
		}
		for _, i := range keep {
			sc.Card.Columns = append(sc.Card.Columns, c.Columns[i])
		}
		for _, r := range c.Rows {
			nr := Row{Scenario: r.Scenario, Invariant: r.Invariant}
			has := false
			for _, i := range keep {
				nr.Cells = append(nr.Cells, r.Cells[i])
				has = has || (c.Columns[i].Stack == st && r.Cells[i].Case != "")
			}
			if has {
				sc.Card.Rows = append(sc.Card.Rows, nr)
			}
		}
		out = append(out, sc)
	}
	return out
}

// runs reports whether column i has a cell that is neither n/a nor
// missing, or belongs to a case whose verdict does not agree with its
// pins.
func (c Card) runs(i int) bool {
	for _, r := range c.Rows {
		cl := r.Cells[i]
		if cl.Case != "" && (cl.Outcome != outcome.Unsupported || !cl.Agrees()) {
			return true
		}
	}
	return false
}

// StackCard is one stack's part of a card, beside the reference.
type StackCard struct {
	Stack, Version string
	Card           Card
	// Unrun are the stack's configurations whose every cell is n/a: the
	// stack lacks what they need, by its own adapter's word.
	Unrun []string
}

// ConfigServer is the configuration of a server column: the grpcserver
// scenarios judge a server stack, not a client's configuration.
const ConfigServer = "server"

// Split returns the card's client columns and its server columns
// (configuration ConfigServer), each with the rows that have a cell in
// them.
func (c Card) Split() (clients, servers Card) {
	part := func(server bool) Card {
		var out Card
		var keep []int
		for i, col := range c.Columns {
			if (col.Config == ConfigServer) == server {
				keep = append(keep, i)
				out.Columns = append(out.Columns, col)
			}
		}
		for _, r := range c.Rows {
			nr := Row{Scenario: r.Scenario, Invariant: r.Invariant}
			has := false
			for _, i := range keep {
				nr.Cells = append(nr.Cells, r.Cells[i])
				has = has || r.Cells[i].Case != ""
			}
			if has {
				out.Rows = append(out.Rows, nr)
			}
		}
		return out
	}
	return part(false), part(true)
}

// serversAbout says what a card of server columns holds: the shipped
// stacks beside rpcserver's gRPC side, or services rpcbench target
// judged from outside.
func (c Card) serversAbout() string {
	if len(c.Columns) > 0 && c.Columns[0].Stack != "rpcserver" {
		return "judged from outside by rpcbench target"
	}
	return "each with its library's default options, rpcserver's gRPC side first"
}

// WriteMarkdownByStack writes a heading line and a table for each
// client stack of ByStack, and the configurations it could not run,
// then one table of the server columns, linking cells to page as
// WriteMarkdown does.
func (c Card) WriteMarkdownByStack(w io.Writer, page string) error {
	clients, servers := c.Split()
	for i, sc := range clients.ByStack() {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		head := "**" + sc.Stack
		if sc.Version != "" {
			head += " " + sc.Version
		}
		head += "**"
		if len(sc.Unrun) > 0 {
			head += fmt.Sprintf(" (n/a throughout, for want of a capability: `%s`)", strings.Join(sc.Unrun, "`, `"))
		}
		if _, err := io.WriteString(w, head+"\n\n"); err != nil {
			return err
		}
		if err := sc.Card.WriteMarkdown(w, page); err != nil {
			return err
		}
	}
	if len(servers.Columns) == 0 {
		return nil
	}
	if _, err := io.WriteString(w, "\n**Servers**, "+servers.serversAbout()+"\n\n"); err != nil {
		return err
	}
	return servers.WriteMarkdown(w, page)
}
