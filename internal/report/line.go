// Package report formats, parses and compares scenario results: the CASE
// lines of evidence/output.txt, the evidence directory and the diff.
package report

import (
	"strings"
)

// Field is one key=value of a CASE line.
type Field struct {
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

// Format renders l as one line without a trailing newline. A value that
// is empty, holds white space or starts with '[' is wrapped in [...].
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
	if v == "" || strings.ContainsAny(v, " \t\n") || strings.HasPrefix(v, "[") {
		return "[" + strings.ReplaceAll(v, "\n", " ") + "]"
	}
	return v
}
