package cases

import "slices"

// registry lists every scenario in run order.
var registry []Case

// All returns every scenario in run order.
func All() []Case { return slices.Clone(registry) }

// Group returns the scenarios of group g in run order.
func Group(g string) []Case {
	var out []Case
	for _, c := range registry {
		if c.Group == g {
			out = append(out, c)
		}
	}
	return out
}

// Groups returns the group names in the order they first appear.
func Groups() []string {
	var out []string
	for _, c := range registry {
		if !slices.Contains(out, c.Group) {
			out = append(out, c.Group)
		}
	}
	return out
}

// Lookup returns the scenario called name.
func Lookup(name string) (Case, bool) {
	i := slices.IndexFunc(registry, func(c Case) bool { return c.Name == name })
	if i < 0 {
		return Case{}, false
	}
	return registry[i], true
}

// Names returns every scenario name in run order.
func Names() []string {
	out := make([]string, len(registry))
	for i, c := range registry {
		out[i] = c.Name
	}
	return out
}
