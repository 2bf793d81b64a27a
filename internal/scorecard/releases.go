package scorecard

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Releases is what changed between the releases of each stack a card
// holds at several releases (columns whose stack is NAME@RELEASE, as
// rpcbench matrix writes them): per stack, the releases in column order
// (oldest first), and each (configuration, scenario, invariant) whose
// outcome is not the same in all of them.
type Releases []StackReleases

// StackReleases is one stack's part of Releases.
type StackReleases struct {
	Stack    string   `json:"stack"`
	Releases []string `json:"releases"`
	// Outcomes counts the (configuration, scenario, invariant) judged in
	// every release; Changes are those among them that changed.
	Outcomes int      `json:"outcomes"`
	Changes  []Change `json:"changes"`
}

// Change is one (configuration, scenario, invariant) whose outcome is
// not the same in every release: its cell in each, in the order of
// StackReleases.Releases.
type Change struct {
	Config    string `json:"config"`
	Scenario  string `json:"scenario"`
	Invariant string `json:"invariant"`
	Cells     []Cell `json:"cells"`
}

// BaseStack splits a column's stack into the stack and the release it
// names, "grpc-go@1.60.3"; release is "" for a stack at no release.
func BaseStack(stack string) (base, release string) {
	base, release, _ = strings.Cut(stack, "@")
	return base, release
}

// Releases finds, among c's columns of stacks at releases, what changed
// from one release to another. A row some release did not run is left
// out: its outcome there is not known.
func (c Card) Releases() Releases {
	var out Releases
	idx := map[string]int{}
	for _, col := range c.Columns {
		base, rel := BaseStack(col.Stack)
		if rel == "" {
			continue
		}
		i, ok := idx[base]
		if !ok {
			i = len(out)
			idx[base] = i
			out = append(out, StackReleases{Stack: base})
		}
		if !slices.Contains(out[i].Releases, rel) {
			out[i].Releases = append(out[i].Releases, rel)
		}
	}
	for i := range out {
		sr := &out[i]
		var configs []string
		for _, col := range c.Columns {
			if base, _ := BaseStack(col.Stack); base == sr.Stack && !slices.Contains(configs, col.Config) {
				configs = append(configs, col.Config)
			}
		}
		for _, cfg := range configs {
			cols := make([]int, len(sr.Releases))
			for k, rel := range sr.Releases {
				cols[k] = slices.IndexFunc(c.Columns, func(col Column) bool { return col.Stack == sr.Stack+"@"+rel && col.Config == cfg })
			}
			for _, r := range c.Rows {
				cells := make([]Cell, len(cols))
				known := true
				for k, ci := range cols {
					if ci < 0 || r.Cells[ci].Outcome == 0 {
						known = false
						break
					}
					cells[k] = r.Cells[ci]
				}
				if !known {
					continue
				}
				sr.Outcomes++
				if slices.ContainsFunc(cells, func(cl Cell) bool { return cl.Text() != cells[0].Text() }) {
					sr.Changes = append(sr.Changes, Change{Config: cfg, Scenario: r.Scenario, Invariant: r.Invariant, Cells: cells})
				}
			}
		}
	}
	return out
}

// Summary says in words what changed of one row: each run of releases
// with the same outcome, "holds in 1.60.3–1.64.1, VIOLATED from 1.66.3".
func (ch Change) Summary(releases []string) string {
	var parts []string
	for i := 0; i < len(ch.Cells); {
		j := i
		for j+1 < len(ch.Cells) && ch.Cells[j+1].Text() == ch.Cells[i].Text() {
			j++
		}
		span := releases[i]
		switch {
		case j == len(ch.Cells)-1 && i > 0:
			span = "from " + releases[i]
		case j > i:
			span = "in " + releases[i] + "–" + releases[j]
		default:
			span = "in " + releases[i]
		}
		parts = append(parts, ch.Cells[i].Text()+" "+span)
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// WriteText writes what changed, a paragraph per stack: its releases,
// how many outcomes were compared, and a line per change.
func (rs Releases) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, sr := range rs {
		fmt.Fprintf(&b, "%s at %s: %d of %d outcomes changed\n", sr.Stack, strings.Join(sr.Releases, ", "), len(sr.Changes), sr.Outcomes)
		for _, ch := range sr.Changes {
			fmt.Fprintf(&b, "  %s %s %s: %s\n", ch.Config, ch.Scenario, ch.Invariant, ch.Summary(sr.Releases))
		}
	}
	if len(rs) == 0 {
		b.WriteString("no stack at several releases in this evidence (rpcbench matrix writes such evidence)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes what changed as a table per stack, a column per
// release, each cell linking to its case's section of the report page
// at page ("" links nothing).
func (rs Releases) WriteMarkdown(w io.Writer, page string) error {
	var b strings.Builder
	for _, sr := range rs {
		fmt.Fprintf(&b, "### %s\n\n%d of %d outcomes changed across %s.\n\n", sr.Stack, len(sr.Changes), sr.Outcomes, strings.Join(sr.Releases, ", "))
		if len(sr.Changes) == 0 {
			continue
		}
		b.WriteString("| configuration | scenario | invariant | " + strings.Join(sr.Releases, " | ") + " |\n")
		b.WriteString("|---|---|---|" + strings.Repeat("---|", len(sr.Releases)) + "\n")
		for _, ch := range sr.Changes {
			fmt.Fprintf(&b, "| %s | %s | %s |", ch.Config, ch.Scenario, ch.Invariant)
			for _, cl := range ch.Cells {
				b.WriteString(" " + mdCell(cl, page) + " |")
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
