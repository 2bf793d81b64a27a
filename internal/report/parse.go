package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rpcbench/rpcbench/internal/outcome"
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
//	CASE <name> PASS|FAIL|ERROR|INTERRUPTED|SKIP k=v k==v k<=v k~=v k=[value with [nested] spaces] k="go quoted"
//
// Fields are separated by one or more spaces. The operator after the key
// gives the field's Kind. A value starting with '[' extends to its
// matching ']' (counting depth); one starting with '"' is a Go string
// literal; any other value extends to the next space and must not start
// with '=', which Format never writes bare. The line must not hold its
// newline.
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
	word := p.word()
	v, ok := parseCaseVerdict(word)
	if !ok {
		p.i -= len(word)
		return Line{}, p.errorf("verdict %q, want PASS, FAIL, INTERRUPTED or SKIP", word)
	}
	l.Verdict = v
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
	// Keys hold no '=', '~', '<', '>' or ':', so the first '=' is in the
	// operator and the byte before it or after it tells which operator.
	f := Field{Key: rest[:eq]}
	opLen := 1
	switch {
	case strings.HasSuffix(f.Key, "~"):
		f.Key, f.Kind = f.Key[:len(f.Key)-1], Volatile
	case strings.HasSuffix(f.Key, "<"):
		f.Key, f.Kind = f.Key[:len(f.Key)-1], Bound
	case strings.HasSuffix(f.Key, ">"):
		f.Key, f.Kind = f.Key[:len(f.Key)-1], LowerBound
	case strings.HasSuffix(f.Key, ":"):
		f.Key, f.Kind = f.Key[:len(f.Key)-1], Outcome
	case strings.HasPrefix(rest[eq:], "=="):
		f.Kind, opLen = Asserted, 2
	}
	if f.Key == "" {
		return Field{}, p.errorf("field with an empty key")
	}
	if strings.ContainsAny(f.Key, "~<>:") {
		return Field{}, p.errorf("key %q holds '~', '<', '>' or ':'", f.Key)
	}
	p.i += eq + opLen
	var err error
	if f.Value, err = p.value(f.Key); err != nil {
		return Field{}, err
	}
	if f.Kind == Outcome {
		if _, err := outcome.Parse(f.Value); err != nil {
			return Field{}, p.errorf("invariant %s: %v", f.Key, err)
		}
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
	case '=':
		return "", p.errorf("value of %q starts with '='; Format writes such a value as [=...]", key)
	default:
		return p.word(), nil
	}
}

// ErrSummaryMismatch is wrapped by ReadOutput's error when a summary line
// does not count the CASE lines it follows.
var ErrSummaryMismatch = errors.New("summary line contradicts the CASE lines")

// ReadOutput reads an output.txt and returns its CASE lines in file
// order.
//
// Only lines starting with "CASE " are records. A summary line ("N passed,
// M failed[, K interrupted][, J skipped]") must count the CASE lines
// between it and the previous summary line, or the start: one that does
// not is an error wrapping ErrSummaryMismatch. Every other line — blank lines, the per-case
// table, anything a terminal capture added — is skipped, so a garbled
// record that lost its prefix shows up as a missing case in Diff rather
// than as an error here. A CASE line that does not parse is an error (a
// *SyntaxError, wrapped) naming its line number.
//
// ANSI SGR sequences (colour: ESC [ ... m) are removed from every line
// before it is read, so a capture of --color always reads as the plain
// output; Format never writes the ESC byte itself, and a SyntaxError's
// Offset counts bytes of the line without them. Both "\n" and "\r\n"
// line endings are accepted.
func ReadOutput(r io.Reader) ([]Line, error) {
	lines, _, err := ReadOutputSummed(r)
	return lines, err
}

// ReadOutputSummed is ReadOutput, and also reports whether a summary
// line follows the last CASE line: false for the output of a run that
// never finished, or a file cut short, whose last lines no summary vouches
// for.
func ReadOutputSummed(r io.Reader) ([]Line, bool, error) {
	br := bufio.NewReader(r)
	var lines []Line
	counted := 0 // lines[:counted] are counted by an earlier summary
	for n := 1; ; n++ {
		s, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, false, fmt.Errorf("report: read output: %w", err)
		}
		text := stripSGR(strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r"))
		if strings.HasPrefix(text, "CASE ") {
			l, perr := Parse(text)
			if perr != nil {
				var se *SyntaxError
				if errors.As(perr, &se) {
					se.LineNo = n
				}
				return nil, false, perr
			}
			lines = append(lines, l)
		} else if got, ok := parseSummary(text); ok {
			above := lines[counted:]
			if want := Tally(above); got != want {
				return nil, false, fmt.Errorf("report: line %d: %w: %q, but the %d CASE lines above it tally %s",
					n, ErrSummaryMismatch, text, len(above), want)
			}
			counted = len(lines)
		}
		if err != nil { // io.EOF
			return lines, counted == len(lines), nil
		}
	}
}

// stripSGR removes every ANSI SGR sequence (ESC '[' digits and ';' 'm')
// from s.
func stripSGR(s string) string {
	if !strings.Contains(s, "\x1b[") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "\x1b[")
		if i < 0 {
			break
		}
		j := i + 2
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';') {
			j++
		}
		if j == len(s) || s[j] != 'm' {
			// Not SGR: keep it, so that the parser reports it.
			b.WriteString(s[:j])
			s = s[j:]
			continue
		}
		b.WriteString(s[:i])
		s = s[j+1:]
	}
	b.WriteString(s)
	return b.String()
}
