package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// docPages returns README.md and every page of docs/, as paths
// relative to this package's directory.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no docs/*.md found: has docs/ moved?")
	}
	return append([]string{readme}, pages...)
}

// mdLink is a markdown link or image: its target, up to a space (a
// title) or the closing parenthesis.
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// fence opens or closes a fenced code block, whose text is not markdown.
var fence = regexp.MustCompile("^\\s*(```|~~~)")

// inlineCode is a code span, whose text is not markdown either.
var inlineCode = regexp.MustCompile("`[^`]*`")

// relativeLinks returns the relative link targets of a markdown text,
// outside code, in order.
func relativeLinks(text string) []string {
	var links []string
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		line = inlineCode.ReplaceAllString(line, "")
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links = append(links, target)
		}
	}
	return links
}

// headingAnchors returns the anchors GitHub gives a markdown text's
// headings: lower case, punctuation dropped, spaces made hyphens, and a
// repeated anchor numbered -1, -2, ...
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// checkLinks returns a line per relative link of the page at path that
// does not resolve: a missing file, or an anchor no heading of its
// markdown page makes.
func checkLinks(path, text string) []string {
	var broken []string
	for _, target := range relativeLinks(text) {
		file, anchor, _ := strings.Cut(target, "#")
		dest := path
		if file != "" {
			dest = filepath.Join(filepath.Dir(path), file)
			if _, err := os.Stat(dest); err != nil {
				broken = append(broken, path+": "+target+": no such file")
				continue
			}
		}
		if anchor == "" || !strings.HasSuffix(dest, ".md") {
			continue
		}
		destText := text
		if file != "" {
			b, err := os.ReadFile(dest)
			if err != nil {
				broken = append(broken, path+": "+target+": "+err.Error())
				continue
			}
			destText = string(b)
		}
		if !headingAnchors(destText)[anchor] {
			broken = append(broken, path+": "+target+": no heading makes #"+anchor)
		}
	}
	return broken
}

// TestDocsLinks: every relative link in README.md and docs/*.md points
// to a file that exists, and a link to a heading of a markdown page to
// a heading that page has, so that moving text between pages cannot
// leave a dead link behind.
func TestDocsLinks(t *testing.T) {
	n := 0
	for _, p := range docPages(t) {
		text := readFile(t, p)
		n += len(relativeLinks(text))
		for _, b := range checkLinks(p, text) {
			t.Error(b)
		}
	}
	if n < 50 {
		t.Errorf("found only %d relative links in README.md and docs/: has the pattern drifted?", n)
	}
}

// TestDocsLinksCatch: the checker finds a missing file, a missing
// anchor, and no link inside code.
func TestDocsLinksCatch(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "page.md")
	if err := os.WriteFile(filepath.Join(dir, "other.md"), []byte("# Other page\n\n## What `go test -race ./...` runs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	text := "# Page\n\n[ok](other.md) [ok](other.md#other-page) [ok](#page) [ok](other.md#what-go-test--race--runs)\n" +
		"[gone](missing.md) [gone](other.md#nowhere) [gone](#nowhere) [web](https://example.com/x)\n" +
		"`[code](missing-in-code.md)`\n```\n[fenced](missing-in-fence.md)\n```\n"
	got := checkLinks(page, text)
	want := []string{
		page + ": missing.md: no such file",
		page + ": other.md#nowhere: no heading makes #nowhere",
		page + ": #nowhere: no heading makes #nowhere",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// readmeMaxLines keeps the README a map a newcomer reads in ten minutes;
// what is longer belongs in a page of docs/, linked from its table.
const readmeMaxLines = 300

// TestReadmeIsAMap: the README stays within readmeMaxLines, and links
// every page of docs/ from its table of docs.
func TestReadmeIsAMap(t *testing.T) {
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move a chapter to docs/ and link it", n, readmeMaxLines)
	}
	pages, _ := filepath.Glob("../../docs/*.md")
	for _, p := range pages {
		if link := "](docs/" + filepath.Base(p) + ")"; !strings.Contains(string(b), link) {
			t.Errorf("README.md does not link %s from its table of docs", filepath.Base(p))
		}
	}
}
