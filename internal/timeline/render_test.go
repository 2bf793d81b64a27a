package timeline

import (
	"encoding/json"
	"html"
	"regexp"
	"strings"
	"testing"
)

// dataBlock finds each timeline's JSON in a page.
var dataBlock = regexp.MustCompile(`(?s)<script type="application/json" class="tl-data">(.*?)</script>`)

// TestRender: values from the evidence cannot become markup, the page
// names no URL, and each timeline's JSON reads back.
func TestRender(t *testing.T) {
	dir := t.TempDir()
	evil := `<script>document.title='pwned'</script>`
	writeTree(t, dir, map[string]string{
		"output.txt": "CASE a_pass PASS x=1\n" +
			"CASE b_fail FAIL why=[" + evil + "] v==[" + evil + "] q=\"</script>\\\"&\"\n" +
			"1 passed, 1 failed\n",
		"logs/server-b_fail.log": logLine("00.000", "LISTEN", `,"addr":"</script><script>alert(1)</script>"`),
		"logs/trace-b_fail.jsonl": strings.Replace(traceLine1, `"err":"context deadline exceeded"`, `"err":"</script><!-- <script>alert(2)</script>"`, 1) + "\n" +
			strings.Replace(traceLine1, `"attempt":1`, `"attempt":2`, 1) + "\n",
		"logs/server-a_pass.log": logLine("00.000", "LISTEN", ``),
	})
	p, err := Load(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Render(&b, p); err != nil {
		t.Fatal(err)
	}
	page := b.String()

	for _, bad := range []string{"<script>document", "<script>alert", "<!-- <script>", "http://", "https://"} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
	if n := strings.Count(page, "<script"); n != 3 { // two timelines' data and the page's script
		t.Errorf("page has %d script elements, want 3", n)
	}
	if want := html.EscapeString(evil); strings.Count(page, want) != 2 {
		t.Errorf("page shows the why and the value escaped %d times, want 2 (%s)", strings.Count(page, want), want)
	}
	if !strings.Contains(page, "&lt;/script&gt;&#34;&amp;") {
		t.Errorf("the quoted value is not shown escaped")
	}
	if i, j := strings.Index(page, `id="case-b_fail"`), strings.Index(page, `id="case-a_pass"`); i < 0 || j < 0 || i > j {
		t.Errorf("b_fail's section at %d, a_pass's at %d: want the failing one first", i, j)
	}

	blocks := dataBlock.FindAllStringSubmatch(page, -1)
	if len(blocks) != 2 {
		t.Fatalf("%d timeline data blocks, want 2", len(blocks))
	}
	var tl Timeline
	if err := json.Unmarshal([]byte(blocks[0][1]), &tl); err != nil {
		t.Fatalf("b_fail's timeline JSON: %v", err)
	}
	var bars int
	for _, l := range tl.Lanes {
		bars += len(l.Bars)
	}
	if bars != 2 || tl.Lanes[1].Bars[0].Err != "</script><!-- <script>alert(2)</script>" {
		t.Errorf("b_fail's timeline: %d bars, first err %q; want 2 and the err as it was", bars, tl.Lanes[1].Bars[0].Err)
	}
	if !strings.Contains(page, "no client trace recorded") {
		t.Errorf("a_pass, without a trace, does not say so")
	}
}

// TestSelfContained: no element of the page loads anything: no src, no
// href but in-page anchors, no CSS url() but the page's own pattern, no
// @import.
func TestSelfContained(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"output.txt":         "CASE a PASS x=1\n",
		"logs/server-a.log":  logLine("00.000", "LISTEN", ``),
		"logs/trace-a.jsonl": traceLine1 + "\n",
		"logs/server-b.log":  logLine("00.000", "LISTEN", ``),
		"logs/b.chaos.txt":   "note\n",
	})
	p, err := Load(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Render(&b, p); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if m := regexp.MustCompile(`(?i)\ssrc\s*=`).FindString(page); m != "" {
		t.Errorf("page has a src attribute: %q", m)
	}
	for _, m := range regexp.MustCompile(`(?i)\shref\s*=\s*"([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(m[1], "#") {
			t.Errorf("page links to %q, outside itself", m[1])
		}
	}
	for _, m := range regexp.MustCompile(`url\(([^)]*)\)`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(m[1], "#") {
			t.Errorf("page's CSS loads %q", m[1])
		}
	}
	if strings.Contains(page, "@import") || regexp.MustCompile(`["'(]//`).MatchString(page) {
		t.Errorf("page imports or names a protocol-relative URL")
	}
}

func TestDuration(t *testing.T) {
	for ms, want := range map[float64]string{0: "0.0 ms", 12.46: "12.5 ms", 999.9: "999.9 ms", 1000: "1.00 s", 8123: "8.12 s"} {
		if got := duration(ms); got != want {
			t.Errorf("duration(%v) = %q, want %q", ms, got, want)
		}
	}
}

// TestRenderScorecard: evidence of the grpc group gets the scorecard,
// each cell linking to its case's section, a violation marked; other
// evidence gets none.
func TestRenderScorecard(t *testing.T) {
	render := func(output string) string {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"output.txt": output})
		p, err := Load(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := Render(&b, p); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	page := render("CASE s_rpcbench PASS scenario=s stack=rpcbench config=client exec_at_most_once:=holds\n" +
		"CASE s_grpcgo_retry PASS scenario=s stack=grpc-go config=retry version=1.85.0 exec_at_most_once:=violated\n" +
		"2 passed, 0 failed\n")
	for _, want := range []string{
		`id="scorecard"`,
		`<th>grpc-go 1.85.0<br>retry</th>`,
		`<td class="o-violated v-PASS"><a href="#case-s_grpcgo_retry">VIOLATED</a></td>`,
		`<td class="o-holds v-PASS"><a href="#case-s_rpcbench">holds</a></td>`,
		`id="case-s_grpcgo_retry"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if page := render("CASE a_pass PASS x=1\n1 passed, 0 failed\n"); strings.Contains(page, `id="scorecard"`) {
		t.Errorf("evidence without grpc cases got a scorecard")
	}
}
