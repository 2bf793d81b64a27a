package timeline

import (
	"bufio"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"

	"github.com/rpcbench/rpcbench/internal/scorecard"
)

// The page's parts. They are inlined, so that the page needs nothing but
// itself: no file beside it and no network.
var (
	//go:embed assets/page.html
	pageHTML string
	//go:embed assets/page.css
	pageCSS string
	//go:embed assets/page.js
	pageJS string
)

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"dur":  duration,
	"cell": func(c scorecard.Cell) string { return c.Text() },
}).Parse(pageHTML))

// pageData is what the template sees.
type pageData struct {
	*Page
	CSS template.CSS
	JS  template.JS
}

// Render writes p as one HTML page. Every value from the evidence is
// escaped by html/template: field values and file names as HTML text,
// each timeline as JSON inside a script element of type
// application/json, which the page's script reads and draws with DOM
// calls that never parse markup.
func Render(w io.Writer, p *Page) error {
	bw := bufio.NewWriter(w)
	if err := pageTemplate.Execute(bw, pageData{Page: p, CSS: template.CSS(pageCSS), JS: template.JS(pageJS)}); err != nil {
		return fmt.Errorf("timeline: render: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("timeline: render: %w", err)
	}
	return nil
}

// duration formats ms milliseconds for people: "850 ms", "12.3 s".
func duration(ms float64) string {
	if ms < 1000 {
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(ms/1000, 'f', 2, 64) + " s"
}
