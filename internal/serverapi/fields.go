package serverapi

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Fields is the key=value text used by business payloads, control methods
// and counters: space-separated pairs, keys without spaces or '=', values
// without spaces.
type Fields map[string]string

// ParseFields parses "k1=v1 k2=v2". A token without '=' is an error.
func ParseFields(b []byte) (Fields, error) {
	fs := Fields{}
	for _, tok := range strings.Fields(string(b)) {
		k, v, ok := strings.Cut(tok, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("serverapi: %q is not key=value", tok)
		}
		fs[k] = v
	}
	return fs, nil
}

// Int returns the field k as an int64, or def when it is absent.
func (fs Fields) Int(k string, def int64) (int64, error) {
	v, ok := fs[k]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("serverapi: field %s=%q is not an integer", k, v)
	}
	return n, nil
}

// String formats the fields sorted by key.
func (fs Fields) String() string {
	keys := make([]string, 0, len(fs))
	for k := range fs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(fs[k])
	}
	return b.String()
}
