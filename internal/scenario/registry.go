package scenario

import "slices"

// Registry is an ordered list of scenarios with unique names.
type Registry []Case

// Select returns the scenarios of group g in run order, every one for
// GroupAll; nil when the group has none.
func (r Registry) Select(g string) Registry {
	if g == GroupAll {
		return r
	}
	var out Registry
	for _, c := range r {
		if c.Group == g {
			out = append(out, c)
		}
	}
	return out
}

// Groups returns the group names in the order they first appear.
func (r Registry) Groups() []string {
	var out []string
	for _, c := range r {
		if !slices.Contains(out, c.Group) {
			out = append(out, c.Group)
		}
	}
	return out
}

// Lookup returns the scenario called name.
func (r Registry) Lookup(name string) (Case, bool) {
	i := slices.IndexFunc(r, func(c Case) bool { return c.Name == name })
	if i < 0 {
		return Case{}, false
	}
	return r[i], true
}

// Names returns every scenario name in run order.
func (r Registry) Names() []string {
	out := make([]string, len(r))
	for i, c := range r {
		out[i] = c.Name
	}
	return out
}

// Scenario returns the cases that run the judging scenario called name
// in each of its columns, in run order; nil when no case's Column names
// it.
func (r Registry) Scenario(name string) Registry {
	var out Registry
	for _, c := range r {
		if c.Column.Scenario == name {
			out = append(out, c)
		}
	}
	return out
}

// Stacks returns the stacks the judging scenarios run, in the order they
// first appear.
func (r Registry) Stacks() []string { return r.columnValues(func(c Column) string { return c.Stack }) }

// Configs returns the configurations the judging scenarios run in, in
// the order they first appear.
func (r Registry) Configs() []string {
	return r.columnValues(func(c Column) string { return c.Config })
}

// columnValues returns what of each column of, non-empty and each once,
// in the order they first appear.
func (r Registry) columnValues(of func(Column) string) []string {
	var out []string
	for _, c := range r {
		if v := of(c.Column); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
