package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// SyntaxError reports a CASE line that Parse cannot read.
type SyntaxError struct {
	// LineNo is the 1-based line of the file ReadOutput was reading; 0
	// when Parse was called on a single line.
	LineNo int
	// Offset is the byte offset in the line where reading failed.
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	if e.LineNo > 0 {
		return fmt.Sprintf("report: line %d, byte %d: %s", e.LineNo, e.Offset, e.Msg)
	}
	return fmt.Sprintf("report: byte %d: %s", e.Offset, e.Msg)
}

// Parse reads one line written by Format:
//
//	CASE <name> PASS|FAIL key=value key~=value key=[value with [nested] spaces] key="go quoted"
//
// Fields are separated by one or more spaces. A value starting with '['
// extends to its matching ']' (counting depth); one starting with '"' is a
// Go string literal; any other value extends to the next space. The line
// must not hold its newline.
func Parse(line string) (Line, error) {
	p := parser{s: line}
	if !strings.HasPrefix(line, "CASE ") {
		return Line{}, p.errorf("want a line starting with %q", "CASE ")
	}
	p.i = len("CASE ")
	var l Line
	p.skipSpaces()
	if l.Name = p.word(); l.Name == "" {
		return Line{}, p.errorf("missing case name")
	}
	p.skipSpaces()
	switch verdict := p.word(); verdict {
	case "PASS":
		l.Pass = true
	case "FAIL":
	default:
		p.i -= len(verdict)
		return Line{}, p.errorf("verdict %q, want PASS or FAIL", verdict)
	}
	for p.skipSpaces(); p.i < len(p.s); p.skipSpaces() {
		f, err := p.field()
		if err != nil {
			return Line{}, err
		}
		l.Fields = append(l.Fields, f)
	}
	return l, nil
}

// parser walks one line; i is the next unread byte of s.
type parser struct {
	s string
	i int
}

func (p *parser) errorf(format string, args ...any) error {
	return &SyntaxError{Offset: p.i, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) skipSpaces() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

// word reads up to the next space or the end of the line.
func (p *parser) word() string {
	start := p.i
	if n := strings.IndexByte(p.s[p.i:], ' '); n >= 0 {
		p.i += n
	} else {
		p.i = len(p.s)
	}
	return p.s[start:p.i]
}

func (p *parser) field() (Field, error) {
	rest := p.s[p.i:]
	eq := strings.IndexByte(rest, '=')
	if sp := strings.IndexByte(rest, ' '); eq < 0 || (sp >= 0 && sp < eq) {
		return Field{}, p.errorf("field %q has no '='", p.word())
	}
	var f Field
	f.Key, f.Volatile = strings.CutSuffix(rest[:eq], "~")
	if f.Key == "" {
		return Field{}, p.errorf("field with an empty key")
	}
	p.i += eq + 1
	var err error
	if f.Value, err = p.value(f.Key); err != nil {
		return Field{}, err
	}
	if p.i < len(p.s) && p.s[p.i] != ' ' {
		return Field{}, p.errorf("want a space after the value of %q, got %q", f.Key, p.s[p.i])
	}
	return f, nil
}

func (p *parser) value(key string) (string, error) {
	if p.i == len(p.s) {
		// key= at the end of the line; Format writes "" as [], but an
		// empty bare value is unambiguous too.
		return "", nil
	}
	switch p.s[p.i] {
	case '[':
		depth := 0
		for j := p.i; j < len(p.s); j++ {
			switch p.s[j] {
			case '[':
				depth++
			case ']':
				if depth--; depth == 0 {
					v := p.s[p.i+1 : j]
					p.i = j + 1
					return v, nil
				}
			}
		}
		return "", p.errorf("value of %q: no ']' matches this '['", key)
	case '"':
		q, err := strconv.QuotedPrefix(p.s[p.i:])
		if err != nil {
			return "", p.errorf("value of %q: bad quoted string", key)
		}
		v, err := strconv.Unquote(q)
		if err != nil {
			return "", p.errorf("value of %q: bad quoted string: %v", key, err)
		}
		p.i += len(q)
		return v, nil
	default:
		return p.word(), nil
	}
}

// ReadOutput reads an output.txt and returns its CASE lines in file
// order. Only lines starting with "CASE " are records; every other line —
// the summary line, blank lines, anything a terminal capture added — is
// skipped, so a garbled record that lost its prefix shows up as a missing
// case in Diff rather than as an error here. A CASE line that does not
// parse is an error (a *SyntaxError, wrapped) naming its line number.
// Both "\n" and "\r\n" line endings are accepted.
func ReadOutput(r io.Reader) ([]Line, error) {
	br := bufio.NewReader(r)
	var lines []Line
	for n := 1; ; n++ {
		s, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("report: read output: %w", err)
		}
		text := strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")
		if strings.HasPrefix(text, "CASE ") {
			l, perr := Parse(text)
			if perr != nil {
				var se *SyntaxError
				if errors.As(perr, &se) {
					se.LineNo = n
				}
				return nil, perr
			}
			lines = append(lines, l)
		}
		if err != nil { // io.EOF
			return lines, nil
		}
	}
}
