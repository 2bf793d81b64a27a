package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	stdhtml "html"
	"image"
	"image/color"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chromiumTimeout bounds one chromium run; it takes about a second.
const chromiumTimeout = 30 * time.Second

// requireChromium returns Debian's chromium, or skips the test without it
// (fails it when RPCBENCH_REQUIRE_CHROMIUM=1, which CI sets).
func requireChromium(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err == nil {
		return bin
	}
	const msg = "chromium not found: install Debian's chromium: apt-get install chromium"
	if os.Getenv("RPCBENCH_REQUIRE_CHROMIUM") == "1" {
		t.Fatal(msg + " (RPCBENCH_REQUIRE_CHROMIUM=1)")
	}
	t.Skip(msg)
	return ""
}

// runChromium runs headless chromium on page with the extra arguments
// and a fresh profile directory, and returns its stdout. It is killed,
// with every process it started, after chromiumTimeout, and in any case
// once it has exited, so that no renderer outlives the test.
func runChromium(t *testing.T, bin, page string, extra ...string) []byte {
	t.Helper()
	profile, err := os.MkdirTemp("", "rpcbench-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(profile)
	ctx, cancel := context.WithTimeout(context.Background(), chromiumTimeout)
	defer cancel()
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile,
	}
	args = append(append(args, extra...), (&url.URL{Scheme: "file", Path: page}).String())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = profile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	killGroup := func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Cancel = killGroup
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if cmd.Process != nil {
		_ = killGroup() // what it left behind, if anything; ESRCH otherwise
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("chromium %s: killed after %v; stderr:\n%s", strings.Join(extra, " "), chromiumTimeout, tail(stderr.String()))
	}
	if err != nil {
		t.Fatalf("chromium %s: %v; stderr:\n%s", strings.Join(extra, " "), err, tail(stderr.String()))
	}
	return stdout.Bytes()
}

// tail returns the last lines of chromium's chatty stderr.
func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(len(lines)-20, 0):], "\n")
}

// TestReportInBrowser opens the fixture's page in a real browser: its
// script draws one timeline per scenario with logs, one bar per trace
// line, runs nothing from the evidence, and the page paints.
func TestReportInBrowser(t *testing.T) {
	bin := requireChromium(t)
	fixture := fixtureDir(t)
	traceLines := 0
	traces, _ := filepath.Glob(filepath.Join(fixture, "logs", "trace-*.jsonl"))
	for _, f := range traces {
		traceLines += strings.Count(readFile(t, f), "\n")
	}
	if traceLines != 5 {
		t.Fatalf("the fixture's traces hold %d lines, want 5", traceLines)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	var stderr bytes.Buffer
	if err := runReport(&reportOptions{app: &app{Out: &stderr, Err: &stderr}, Evidence: fixture, Output: page}); err != nil {
		t.Fatalf("report: %v\n%s", err, stderr.String())
	}

	t.Run("dom", func(t *testing.T) {
		t.Parallel()
		dom := string(runChromium(t, bin, page, "--dump-dom"))
		if errs := regexp.MustCompile(`data-error="[^"]*"`).FindAllString(dom, -1); len(errs) > 0 {
			t.Fatalf("timelines not drawn: %q", errs)
		}
		if n := strings.Count(dom, `data-rendered="true"`); n != 3 {
			t.Errorf("%d timelines drawn, want 3 (the scenarios with a server log)", n)
		}
		if !strings.Contains(dom, `<body data-timelines-drawn="3">`) {
			t.Errorf("the page's script did not finish: no data-timelines-drawn=3 on <body>")
		}
		if n := strings.Count(dom, ` data-attempt="`); n != traceLines {
			t.Errorf("%d attempt bars drawn, want %d (the trace lines)", n, traceLines)
		}
		for _, cls := range []string{`class="bar unknown"`, `class="bar ok"`, `class="bar notsent"`, `class="mk ev-DEDUP_HIT"`, `class="mk ev-CRASH"`, `class="crash-line"`} {
			if !strings.Contains(dom, cls) {
				t.Errorf("nothing drawn with %s", cls)
			}
		}
		if strings.Contains(dom, "data-pwned=") || strings.Contains(dom, "<script>document") {
			t.Errorf("a script from the evidence ran or became markup")
		}
	})
	t.Run("screenshot", func(t *testing.T) {
		t.Parallel()
		shot := filepath.Join(t.TempDir(), "report.png")
		runChromium(t, bin, page, "--screenshot="+shot, "--window-size=1280,2000", "--hide-scrollbars")
		f, err := os.Open(shot)
		if err != nil {
			t.Fatalf("no screenshot: %v", err)
		}
		defer f.Close()
		img, err := png.Decode(f)
		if err != nil {
			t.Fatalf("screenshot is not a PNG: %v", err)
		}
		if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 2000 {
			t.Errorf("screenshot is %dx%d, want 1280x2000", b.Dx(), b.Dy())
		}
		if n := colours(img, 50); n < 50 {
			t.Errorf("screenshot has %d colours: the page did not paint", n)
		}
	})
}

// colours counts the distinct colours of img, up to limit.
func colours(img image.Image, limit int) int {
	seen := map[color.RGBA]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), uint8(a >> 8)}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}

// scorecardEvidence writes an evidence directory whose output.txt is a
// grpc group run of rows scenarios in the reference column and every
// configuration of four stacks: a scorecard wider than any window and
// taller than one.
func scorecardEvidence(t *testing.T, rows int) string {
	t.Helper()
	var b strings.Builder
	n := 0
	for i := range rows {
		sc := fmt.Sprintf("grpc_scenario_with_a_long_name_%02d", i)
		fmt.Fprintf(&b, "CASE %s_rpcbench PASS scenario=%s stack=rpcbench config=client exec_at_most_once:=holds\n", sc, sc)
		n++
		for _, st := range []string{"grpc-go", "grpc-js", "grpcio", "connect-go"} {
			for _, cfg := range []string{"default", "retry", "retry+key", "throttled"} {
				fmt.Fprintf(&b, "CASE %s_%s_%s PASS scenario=%s stack=%s config=%s version=1.2.3 exec_at_most_once:=violated\n",
					sc, strings.ReplaceAll(st, "-", ""), strings.ReplaceAll(cfg, "+", "_"), sc, st, cfg)
				n++
			}
		}
	}
	fmt.Fprintf(&b, "%d passed, 0 failed\n", n)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "output.txt"), b.String())
	return dir
}

// TestReportScorecardReachable: in a 1280x900 window, the scorecard of
// more columns than fit scrolls sideways in a box no taller than the
// window, so that its scrollbar is in sight once the box is, not below
// hundreds of rows; its last column lies within what the box scrolls
// to.
func TestReportScorecardReachable(t *testing.T) {
	bin := requireChromium(t)
	page := filepath.Join(t.TempDir(), "report.html")
	var stderr bytes.Buffer
	if err := runReport(&reportOptions{app: &app{Out: &stderr, Err: &stderr}, Evidence: scorecardEvidence(t, 60), Output: page}); err != nil {
		t.Fatalf("report: %v\n%s", err, stderr.String())
	}
	// The probe measures the laid-out page and writes what it found on
	// <body>, for --dump-dom; it is added to this test's copy only.
	const probe = `<script>
(function () {
  var table = document.querySelector('.scorecard table');
  var box = table.parentElement;
  while (box && box !== document.body && !/^(auto|scroll)$/.test(getComputedStyle(box).overflowX)) box = box.parentElement;
  var r = {};
  if (!box || box === document.body) { r.box = 'none'; } else {
    var th = table.querySelectorAll('thead th'), last = th[th.length - 1];
    var br = box.getBoundingClientRect();
    r.box = box.tagName + '.' + box.className;
    r.scrolls = box.scrollWidth > box.clientWidth;
    r.lastRight = Math.round(last.getBoundingClientRect().right - br.left + box.scrollLeft);
    r.scrollWidth = box.scrollWidth;
    r.height = Math.round(br.height);
    r.innerHeight = window.innerHeight;
  }
  document.body.setAttribute('data-probe', JSON.stringify(r));
})();
</script></body>`
	html := strings.Replace(readFile(t, page), "</body>", probe, 1)
	writeFile(t, page, html)
	dom := string(runChromium(t, bin, page, "--dump-dom", "--window-size=1280,900"))
	m := regexp.MustCompile(`data-probe="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatal("the probe did not run: no data-probe on <body>")
	}
	var got struct {
		Box                    string
		Scrolls                bool
		LastRight, ScrollWidth int
		Height, InnerHeight    int
	}
	if err := json.Unmarshal([]byte(stdhtml.UnescapeString(m[1])), &got); err != nil {
		t.Fatalf("probe %q: %v", m[1], err)
	}
	switch {
	case got.Box == "none":
		t.Fatalf("no box around the scorecard scrolls sideways (overflow-x auto or scroll)")
	case !got.Scrolls:
		t.Errorf("%s does not scroll: the fixture's table should be wider than the window", got.Box)
	case got.LastRight > got.ScrollWidth:
		t.Errorf("the last column ends at %d px, past what %s scrolls to (%d px)", got.LastRight, got.Box, got.ScrollWidth)
	}
	if got.Height > got.InnerHeight {
		t.Errorf("%s is %d px tall, more than the %d px window: its scrollbar is out of reach until the table's last row", got.Box, got.Height, got.InnerHeight)
	}
}
