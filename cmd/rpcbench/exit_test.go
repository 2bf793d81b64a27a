package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/scorecard"
)

const readme = "../../README.md"

// cliDoc and scorecardDoc are the docs pages that hold, between their
// markers, the exit code table and the gRPC scorecard.
const (
	cliDoc       = "../../docs/cli.md"
	scorecardDoc = "../../docs/scorecard.md"
)

// TestReadmeExitCodes: the exit code table of docs/cli.md is exit.go's,
// the one place exit codes are decided.
func TestReadmeExitCodes(t *testing.T) {
	const begin, end = "<!-- exit codes: from cmd/rpcbench/exit.go -->\n", "<!-- end of exit codes -->\n"
	b, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("docs/cli.md has no table between %q and %q", begin, end)
	}
	got, want := text[i+len(begin):j], exitCodeTable()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(cliDoc, []byte(text[:i+len(begin)]+want+text[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/cli.md's exit code table differs from exit.go's (-want +got):\n%s\nrefresh it with: go test ./cmd/rpcbench -run TestReadmeExitCodes -update", cmp.Diff(want, got))
}

// TestExitCodesTable: every exit code exitCode can return is in the
// table, once, in order.
func TestExitCodesTable(t *testing.T) {
	var got []string
	for _, c := range exitCodes {
		got = append(got, c.Code)
	}
	want := []string{"0", "1", "2", "3", "130"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exit codes (-want +got):\n%s", diff)
	}
	if !strings.Contains(exitCodeHelp(), "141 when stdout") {
		t.Errorf("--help does not name SIGPIPE's 141:\n%s", exitCodeHelp())
	}
	for _, l := range strings.Split(exitCodeHelp(), "\n") {
		if len(l) > 80 {
			t.Errorf("--help line longer than 80 columns: %q", l)
		}
	}
}

// TestReadmeScorecard: the gRPC scorecard of docs/scorecard.md is the one
// rpcbench scorecard makes of the committed evidence/grpc, never a table edited
// by hand.
func TestReadmeScorecard(t *testing.T) {
	const begin, end = "<!-- scorecard: rpcbench scorecard --markdown of evidence/grpc -->\n", "<!-- end of scorecard -->\n"
	b, err := os.ReadFile(scorecardDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("docs/scorecard.md has no table between %q and %q", begin, end)
	}
	_, lines, err := readOutputFile(filepath.Join("..", "..", "evidence", "grpc"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	card, err := scorecard.Build(lines)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	if err := card.WriteMarkdownByStack(&want, ""); err != nil {
		t.Fatal(err)
	}
	checkGenerated(t, scorecardDoc, text, i+len(begin), j, want.String(), "TestReadmeScorecard")
}

// checkGenerated checks that text, doc's contents, holds want between
// offsets i and j, and with -update writes it there.
func checkGenerated(t *testing.T, doc, text string, i, j int, want, test string) {
	t.Helper()
	got := text[i:j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(doc, []byte(text[:i]+want+text[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's generated table differs from the evidence's (-want +got):\n%s\nrefresh it with: go test ./cmd/rpcbench -run %s -update", doc, cmp.Diff(want, got), test)
}

// matrixDoc is the page whose table of what changed between releases is
// generated from evidence/matrix.
const matrixDoc = "../../docs/matrix.md"

// TestMatrixDoc: docs/matrix.md's table of what changed from one release
// to another is what 'rpcbench scorecard --releases --markdown' makes of
// the committed evidence/matrix.
func TestMatrixDoc(t *testing.T) {
	const begin, end = "<!-- releases: rpcbench scorecard --releases --markdown of evidence/matrix -->\n", "<!-- end of releases -->\n"
	b, err := os.ReadFile(matrixDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("docs/matrix.md has no table between %q and %q", begin, end)
	}
	_, lines, err := readOutputFile(filepath.Join("..", "..", "evidence", "matrix"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	card, err := scorecard.Build(lines)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	if err := card.Releases().WriteMarkdown(&want, ""); err != nil {
		t.Fatal(err)
	}
	checkGenerated(t, matrixDoc, text, i+len(begin), j, want.String(), "TestMatrixDoc")
}
