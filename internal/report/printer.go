package report

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"golang.org/x/term"
)

// ColorMode says when a Printer colours verdicts.
type ColorMode int

const (
	// ColorAuto colours when the output is a terminal, NO_COLOR is unset
	// or empty and TERM is not "dumb".
	ColorAuto ColorMode = iota
	// ColorAlways colours regardless of the output and the environment.
	ColorAlways
	// ColorNever never colours.
	ColorNever
)

// ColorModes lists the names ParseColorMode accepts, in ColorMode order.
var ColorModes = []string{"auto", "always", "never"}

func (m ColorMode) String() string {
	if m >= 0 && int(m) < len(ColorModes) {
		return ColorModes[m]
	}
	return fmt.Sprintf("UNKNOWN_COLOR_MODE_%d", int(m))
}

// ParseColorMode reads "auto", "always" or "never".
func ParseColorMode(s string) (ColorMode, error) {
	for i, name := range ColorModes {
		if s == name {
			return ColorMode(i), nil
		}
	}
	return 0, fmt.Errorf("report: colour mode %q, want one of %s", s, strings.Join(ColorModes, ", "))
}

// UseColor decides whether output to w is coloured under mode m. Only an
// *os.File (anything with an Fd method) can be a terminal.
func UseColor(w io.Writer, m ColorMode) bool {
	switch m {
	case ColorAlways:
		return true
	case ColorAuto:
		return os.Getenv("NO_COLOR") == "" && IsTerminal(w)
	default:
		return false
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// IsTerminal reports whether w is a terminal a person reads, one that is
// not TERM=dumb: there, Short lines and a live progress line replace the
// CASE lines that files and pipes get.
func IsTerminal(w io.Writer) bool {
	return os.Getenv("TERM") != "dumb" && isTerminal(w)
}

// TerminalWidth is w's width in columns when it is a terminal, else 100.
func TerminalWidth(w io.Writer) int {
	if f, ok := w.(interface{ Fd() uintptr }); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	return 100
}

// Printer prints CASE lines for a person: Format's text, with the
// verdict coloured as VerdictPainter colours it. It is not safe for
// concurrent use.
type Printer struct {
	w     io.Writer
	paint func(Verdict) string
}

// NewPrinter returns a Printer writing to w, colouring as UseColor(w, m)
// decides once, now.
func NewPrinter(w io.Writer, m ColorMode) *Printer {
	return &Printer{w: w, paint: VerdictPainter(w, m)}
}

// PrintShort writes Short(l, d, nameWidth, width) and a newline in one
// Write, the verdict coloured as Print colours it.
func (p *Printer) PrintShort(l Line, d time.Duration, nameWidth, width int) error {
	s := Short(l, d, nameWidth, width)
	_, err := io.WriteString(p.w, p.paint(l.Verdict)+strings.TrimPrefix(s, l.Verdict.String())+"\n")
	return err
}

// Print writes l and a newline in one Write.
func (p *Printer) Print(l Line) error {
	// Format starts "CASE <name> <verdict>"; colour only the verdict.
	s := Format(l)
	head := len("CASE ") + len(l.Name) + 1
	_, err := io.WriteString(p.w, s[:head]+p.paint(l.Verdict)+s[head+len(l.Verdict.String()):]+"\n")
	return err
}
