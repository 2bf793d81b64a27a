package scorecard

import (
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/internal/report"
)

// TestReleases: of a stack at three releases, a row whose outcome
// changed is a change, summarised by runs of releases; one that did not,
// or that a release did not run, is not; a column at no release is not a
// stack of the view.
func TestReleases(t *testing.T) {
	line := func(name, stack, version, config, fields string) report.Line {
		l, err := report.Parse("CASE " + name + " PASS scenario=s stack=" + stack + " config=" + config + " version=" + version + " " + fields)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	lines := []report.Line{
		line("a", "rpcbench", "", "client", "x:=holds y:=holds"),
		line("b", "g@1.1", "1.1", "retry", "x:=violated y:=holds"),
		line("c", "g@1.2", "1.2", "retry", "x:=violated y:=holds"),
		line("d", "g@1.3", "1.3", "retry", "x:=holds y:=holds z:=holds"),
	}
	c, err := Build(lines)
	if err != nil {
		t.Fatal(err)
	}
	rs := c.Releases()
	if len(rs) != 1 || rs[0].Stack != "g" || strings.Join(rs[0].Releases, ",") != "1.1,1.2,1.3" {
		t.Fatalf("got %+v, want g at 1.1, 1.2, 1.3", rs)
	}
	if rs[0].Outcomes != 2 || len(rs[0].Changes) != 1 || rs[0].Changes[0].Invariant != "x" {
		t.Fatalf("got %d outcomes, changes %+v; want 2 and x alone (z ran in one release)", rs[0].Outcomes, rs[0].Changes)
	}
	if got, want := rs[0].Changes[0].Summary(rs[0].Releases), "VIOLATED in 1.1–1.2, holds from 1.3"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	var b strings.Builder
	if err := rs.WriteMarkdown(&b, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| retry | s | x | **VIOLATED** | **VIOLATED** | holds |") {
		t.Errorf("markdown:\n%s", b.String())
	}
}
