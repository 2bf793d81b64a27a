// Package line is the adapter protocols' line codec, shared by
// clientkit's and serverkit's sessions: a harness's lines read and their
// fields held to the names each message allows, and whole JSON lines
// written from many goroutines.
package line

import (
	"bufio"
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

// Reader reads a harness's lines, each a JSON object with a string
// "type", numbered from 1.
type Reader struct {
	sc *bufio.Scanner
	n  int // the last line's number
}

// NewReader reads lines of at most max bytes, their newline left out,
// from r.
func NewReader(r io.Reader, max int) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), max+1)
	return &Reader{sc: sc}
}

// Next returns the next line's number, type and fields. At the end of
// the input the error is io.EOF; any other error's text is the fatal
// line's: the line is not an object with a string "type", it is too
// long, or the input could not be read.
func (r *Reader) Next() (n int, typ string, f Fields, err error) {
	if !r.sc.Scan() {
		if err := r.sc.Err(); err != nil {
			return r.n, "", nil, fmt.Errorf("reading stdin: %v", err)
		}
		return r.n, "", nil, io.EOF
	}
	r.n++
	if err := json.Unmarshal(r.sc.Bytes(), &f); err != nil || f == nil {
		return r.n, "", nil, fmt.Errorf("line %d: not a JSON object: %v", r.n, err)
	}
	if err := json.Unmarshal(f["type"], &typ); err != nil {
		return r.n, "", nil, fmt.Errorf("line %d: no string \"type\"", r.n)
	}
	return r.n, typ, f, nil
}
