// Package line is the adapter protocols' line codec, shared by
// clientkit's and serverkit's sessions: a harness line's fields held to
// the names its message allows, and whole JSON lines written from many
// goroutines.
package line

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
)

// Fields is a harness line's object, each field still raw.
type Fields map[string]json.RawMessage

// Decode fills v from f, holding f to exactly the fields named: those in
// required must be present and not null, those in optional may be
// absent, and any other but "type" is an error.
func (f Fields) Decode(v any, required, optional []string) error {
	for _, k := range slices.Sorted(maps.Keys(f)) {
		if k != "type" && !slices.Contains(required, k) && !slices.Contains(optional, k) {
			return fmt.Errorf("unknown field %q", k)
		}
	}
	for _, k := range required {
		if raw, ok := f[k]; !ok || string(raw) == "null" {
			return fmt.Errorf("no %q", k)
		}
	}
	rest := maps.Clone(f)
	delete(rest, "type")
	b, _ := json.Marshal(rest)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Writer writes whole JSON lines; writes from concurrent goroutines
// never interleave.
type Writer struct {
	mu sync.Mutex // guards w
	w  io.Writer
}

// NewWriter is a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Send writes v as one line, in one Write, before it returns. v must
// marshal: every message type does.
func (l *Writer) Send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(append(b, '\n'))
}
