// Package report formats, parses and compares scenario results: the CASE
// lines of evidence/output.txt, the evidence directory and the diff.
package report

import (
	"strconv"
	"strings"
)

// Field is one key=value of a CASE line.
type Field struct {
	// Key must be non-empty and hold no white space or '=', and must not
	// end in '~': Format writes it verbatim and Parse splits on the first
	// '='.
	Key   string
	Value string
	// Volatile marks a value that legitimately differs between runs
	// (times, random chunk counts). It is printed as key~=value and shown
	// but never compared by Diff.
	Volatile bool
}

// Line is one scenario's result: CASE <name> PASS|FAIL key=value ...
type Line struct {
	Name   string
	Pass   bool
	Fields []Field
}

// Verdict returns "PASS" or "FAIL".
func (l Line) Verdict() string {
	if l.Pass {
		return "PASS"
	}
	return "FAIL"
}

// Format renders l as one line without a trailing newline; Parse reads it
// back. Name must be non-empty and hold no white space.
//
// Newlines in a value become spaces, so a CASE line is always one line;
// everything else survives Parse(Format(l)). A value is written
//   - bare, when it is non-empty, holds no space or control character and
//     starts with neither '[' nor '"';
//   - as [value], when its square brackets balance and it holds no control
//     character other than tab;
//   - Go-quoted ("...", strconv.Quote) otherwise: only a value with an
//     unbalanced bracket or a control character, which [...] cannot hold.
func Format(l Line) string {
	var b strings.Builder
	b.WriteString("CASE ")
	b.WriteString(l.Name)
	b.WriteByte(' ')
	b.WriteString(l.Verdict())
	for _, f := range l.Fields {
		b.WriteByte(' ')
		b.WriteString(f.Key)
		if f.Volatile {
			b.WriteByte('~')
		}
		b.WriteByte('=')
		b.WriteString(quote(f.Value))
	}
	return b.String()
}

func quote(v string) string {
	v = strings.ReplaceAll(v, "\n", " ")
	switch {
	case v != "" && v[0] != '[' && v[0] != '"' && !hasSpaceOrControl(v, false):
		return v
	case balanced(v) && !hasSpaceOrControl(v, true):
		return "[" + v + "]"
	default:
		return strconv.Quote(v)
	}
}

// hasSpaceOrControl reports whether v holds an ASCII space or control
// character; with inBrackets, space and tab are allowed.
func hasSpaceOrControl(v string, inBrackets bool) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if inBrackets && (c == ' ' || c == '\t') {
			continue
		}
		if c <= ' ' || c == 0x7f {
			return true
		}
	}
	return false
}

// balanced reports whether every ']' in v closes an earlier '[' and every
// '[' is closed, which is what lets Parse find the end of [v].
func balanced(v string) bool {
	depth := 0
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '[':
			depth++
		case ']':
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}
