package scorecard

import "slices"

// References are the stacks each table compares the others with: the
// first client column's (rpcbench's own client) and the first server
// column's (rpcserver), as Split parts them.
func (c Card) References() []string {
	var refs []string
	clients, servers := c.Split()
	for _, part := range []Card{clients, servers} {
		if len(part.Columns) > 0 && !slices.Contains(refs, part.Columns[0].Stack) {
			refs = append(refs, part.Columns[0].Stack)
		}
	}
	return refs
}

// Stacks are the card's judged stacks, those other than References, in
// the order they first appear.
func (c Card) Stacks() []string { return c.judged(func(col Column) string { return col.Stack }) }

// Configs are the configurations of the judged stacks' columns, in the
// order they first appear.
func (c Card) Configs() []string { return c.judged(func(col Column) string { return col.Config }) }

// judged returns what of each judged column (not a reference's), each
// once, in the order they first appear.
func (c Card) judged(of func(Column) string) []string {
	refs := c.References()
	var out []string
	for _, col := range c.Columns {
		if v := of(col); !slices.Contains(refs, col.Stack) && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Filter keeps the judged columns of the named stacks in the named
// configurations (nil names every one), beside the reference columns,
// and the rows that have a cell in a judged column kept; a reference
// column left without a cell goes too. Names the card does not hold
// select nothing: the caller checks them against Stacks and Configs.
// With neither list, the card is returned as it is.
func (c Card) Filter(stacks, configs []string) Card {
	if len(stacks) == 0 && len(configs) == 0 {
		return c
	}
	refs := c.References()
	isRef := func(i int) bool { return slices.Contains(refs, c.Columns[i].Stack) }
	var keep []int
	for i, col := range c.Columns {
		if isRef(i) || (len(stacks) == 0 || slices.Contains(stacks, col.Stack)) && (len(configs) == 0 || slices.Contains(configs, col.Config)) {
			keep = append(keep, i)
		}
	}
	var rows []Row
	used := map[int]bool{}
	for _, r := range c.Rows {
		judged := false
		for _, i := range keep {
			judged = judged || !isRef(i) && r.Cells[i].Case != ""
		}
		if !judged {
			continue
		}
		rows = append(rows, r)
		for _, i := range keep {
			if r.Cells[i].Case != "" {
				used[i] = true
			}
		}
	}
	var out Card
	keep = slices.DeleteFunc(keep, func(i int) bool { return !used[i] })
	for _, i := range keep {
		out.Columns = append(out.Columns, c.Columns[i])
	}
	for _, r := range rows {
		nr := Row{Scenario: r.Scenario, Invariant: r.Invariant}
		for _, i := range keep {
			nr.Cells = append(nr.Cells, r.Cells[i])
		}
		out.Rows = append(out.Rows, nr)
	}
	return out
}
