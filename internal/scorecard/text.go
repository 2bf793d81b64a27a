package scorecard

import (
	"io"
	"slices"
	"strings"

	"github.com/fatih/color"

	"github.com/rpcbench/rpcbench/internal/outcome"
)

// TextOptions say how WriteText lays the card out for a person.
type TextOptions struct {
	// Width is the line length to fit, in columns; a table wider than
	// that is cut into parts that fit, each repeating the row names. A
	// row name longer than Width still shows whole. Zero means no limit.
	Width int
	// Color colours the cells: holds green, violated red, violated
	// sometimes yellow, n/a and missing cells faint, and a verdict that
	// does not agree with the pins bold.
	Color bool
}

// gap separates the columns of a text table.
const gap = "  "

// WriteText writes the card for a terminal: as WriteMarkdownByStack
// does, a table per client stack beside the reference columns, naming
// the configurations it could not run, then one of the server columns.
// Within each, the scenarios that run in the same columns share a block
// that shows those columns alone; each scenario is a line with its
// invariants indented beneath it.
func (c Card) WriteText(w io.Writer, o TextOptions) error {
	p := newPainter(o.Color)
	var b strings.Builder
	clients, servers := c.Split()
	for _, sc := range clients.ByStack() {
		name := sc.Stack
		if sc.Version != "" {
			name += " " + sc.Version
		}
		rest := ""
		if len(sc.Unrun) > 0 {
			rest = "(n/a throughout, for want of a capability: " + strings.Join(sc.Unrun, ", ") + ")"
		}
		b.WriteString(p.head.Sprint(name) + wrap(len(name), rest, o.Width) + "\n")
		sc.Card.writeBlocks(&b, o.Width, p)
		b.WriteString("\n")
	}
	if len(servers.Columns) > 0 {
		b.WriteString(p.head.Sprint("Servers") + "," + wrap(len("Servers,"), servers.serversAbout(), o.Width) + "\n")
		servers.writeBlocks(&b, o.Width, p)
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, strings.TrimSuffix(b.String(), "\n"))
	return err
}

// wrap returns text's words, each after a space, as lines of at most
// width columns (0: no limit), the first of which starts at column
// used; the lines after it are indented by two.
func wrap(used int, text string, width int) string {
	var b strings.Builder
	for _, w := range strings.Fields(text) {
		if width > 0 && used > 2 && used+1+len(w) > width {
			b.WriteString("\n ")
			used = 1
		}
		b.WriteString(" " + w)
		used += 1 + len(w)
	}
	return b.String()
}

// blocks groups the card's rows by the columns their scenario has a
// cell in, in the order each group first appears; a block lists those
// columns, the reference's first, and its rows, a scenario's rows
// together.
func (c Card) blocks() []block {
	cols := map[string][]int{}
	for _, r := range c.Rows {
		for i, cl := range r.Cells {
			if cl.Case != "" && !slices.Contains(cols[r.Scenario], i) {
				cols[r.Scenario] = append(cols[r.Scenario], i)
			}
		}
	}
	// The reference columns first, then the others, each in card order.
	ref := c.Columns[0].Stack
	order := func(a, b int) int {
		if ra, rb := c.Columns[a].Stack == ref, c.Columns[b].Stack == ref; ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return a - b
	}
	var out []block
	for _, r := range c.Rows {
		set := cols[r.Scenario]
		slices.SortFunc(set, order)
		k := slices.IndexFunc(out, func(b block) bool { return slices.Equal(b.cols, set) })
		if k < 0 {
			k = len(out)
			out = append(out, block{cols: set})
		}
		out[k].rows = append(out[k].rows, r)
	}
	return out
}

// block is rows that have cells in the same columns, by index.
type block struct {
	cols []int
	rows []Row
}

// writeBlocks writes each block as a table of its columns, cut into
// parts that fit width.
func (c Card) writeBlocks(b *strings.Builder, width int, p painter) {
	// The row names, as wide in every block: a scenario on a line of its
	// own, its invariants indented beneath.
	nameW := 0
	for _, r := range c.Rows {
		nameW = max(nameW, len(r.Scenario), 2+len(r.Invariant))
	}
	for _, bl := range c.blocks() {
		widths := make([]int, len(bl.cols))
		for k, i := range bl.cols {
			widths[k] = max(len(c.Columns[i].Stack), len(c.Columns[i].Config))
			for _, r := range bl.rows {
				widths[k] = max(widths[k], len(r.Cells[i].Text()))
			}
		}
		for _, part := range fit(nameW, widths, width) {
			b.WriteString("\n")
			// Two header lines: the stack where it changes, then the
			// configuration.
			stacks, configs := pad("", nameW), pad("", nameW)
			prev := ""
			for _, k := range part {
				col := c.Columns[bl.cols[k]]
				st := ""
				if col.Stack != prev {
					st = col.Stack
				}
				prev = col.Stack
				stacks += gap + pad(st, widths[k])
				configs += gap + pad(col.Config, widths[k])
			}
			b.WriteString(p.head.Sprint(strings.TrimRight(stacks, " ")) + "\n")
			b.WriteString(p.head.Sprint(strings.TrimRight(configs, " ")) + "\n")
			sc := ""
			for _, r := range bl.rows {
				if r.Scenario != sc {
					sc = r.Scenario
					b.WriteString(sc + "\n")
				}
				line := pad("  "+r.Invariant, nameW)
				for _, k := range part {
					cl := r.Cells[bl.cols[k]]
					line += gap + p.cell(cl) + strings.Repeat(" ", widths[k]-len(cl.Text()))
				}
				b.WriteString(strings.TrimRight(line, " ") + "\n")
			}
		}
	}
}

// fit cuts columns of the given widths into runs that fit width beside
// the row names, nameW wide, each run at least one column; width 0 is
// one run of them all.
func fit(nameW int, widths []int, width int) [][]int {
	var parts [][]int
	var part []int
	used := nameW
	for k, wd := range widths {
		if len(part) > 0 && width > 0 && used+len(gap)+wd > width {
			parts = append(parts, part)
			part, used = nil, nameW
		}
		part = append(part, k)
		used += len(gap) + wd
	}
	if len(part) > 0 {
		parts = append(parts, part)
	}
	return parts
}

// pad left-aligns s in n columns.
func pad(s string, n int) string {
	return s + strings.Repeat(" ", max(n-len(s), 0))
}

// painter colours a text table's parts; every colour is off when
// colouring is.
type painter struct {
	head, holds, violated, sometimes, faint, verdict *color.Color
}

func newPainter(on bool) painter {
	p := painter{
		head:      color.New(color.Bold),
		holds:     color.New(color.FgGreen),
		violated:  color.New(color.FgRed, color.Bold),
		sometimes: color.New(color.FgYellow),
		faint:     color.New(color.Faint),
		verdict:   color.New(color.Bold, color.ReverseVideo),
	}
	for _, c := range []*color.Color{p.head, p.holds, p.violated, p.sometimes, p.faint, p.verdict} {
		if on {
			c.EnableColor()
		} else {
			c.DisableColor()
		}
	}
	return p
}

// cell is cl.Text() coloured by its outcome, a verdict that does not
// agree with the pins marked apart.
func (p painter) cell(cl Cell) string {
	text := cl.Text()
	suffix := ""
	if cl.Verdict != "" && !cl.Agrees() {
		suffix = " (" + cl.Verdict + ")"
		text = strings.TrimSuffix(text, suffix)
	}
	var c *color.Color
	switch cl.Outcome {
	case outcome.Holds:
		c = p.holds
	case outcome.Violated:
		c = p.violated
	case outcome.Sometimes:
		c = p.sometimes
	default:
		c = p.faint
	}
	if suffix != "" {
		suffix = " " + p.verdict.Sprint("("+cl.Verdict+")")
	}
	return c.Sprint(text) + suffix
}
