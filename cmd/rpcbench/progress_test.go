package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// TestProgressErasedBeforeOtherOutput: whatever is written through wrap
// comes after the status line is erased, so no line is written into it,
// and close leaves the line erased and the redrawing stopped.
func TestProgressErasedBeforeOtherOutput(t *testing.T) {
	var term bytes.Buffer
	p := startProgress(&term, time.Hour, 80) // drawn by begin alone
	p.begin(1, 2, "late_response_dropped_by_id")
	if got := term.String(); got != "\r\x1b[K[1/2] late_response_dropped_by_id 0.0s" {
		t.Fatalf("status line %q", got)
	}
	fmt.Fprint(p.wrap(&term), "PASS late_response_dropped_by_id\n")
	p.close()
	p.close()
	want := "\r\x1b[K[1/2] late_response_dropped_by_id 0.0s\r\x1b[KPASS late_response_dropped_by_id\n"
	if got := term.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if newProgress(&term, false, 80) != nil {
		t.Errorf("a status line on what is not a terminal")
	}
	// close erases a line that is shown, and a narrow terminal gets the
	// line cut to its width less one, so that it never wraps.
	term.Reset()
	p = startProgress(&term, time.Hour, 12)
	p.begin(3, 26, "late_response_dropped_by_id")
	p.close()
	if got, want := term.String(), "\r\x1b[K[3/26] late\r\x1b[K"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var none *progress
	none.begin(1, 1, "x")
	none.close()
}

// TestVerboseEventsCapped: -v prints the first and last events of a long
// log and counts the rest by name, saying where the whole log is.
func TestVerboseEventsCapped(t *testing.T) {
	var evs []serverapi.Event
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range 6060 {
		name := "CONN_OPEN"
		if i%2 == 1 {
			name = "CONN_CLOSED"
		}
		evs = append(evs, serverapi.Event{Time: at, Name: name})
	}
	var b bytes.Buffer
	line := func(i int) string { return evs[i].String() }
	kind := func(i int) string { return evs[i].Name }
	printCapped(&b, len(evs), line, kind, "event", "the whole log is in ev/logs")
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != verboseLines+1 {
		t.Errorf("%d lines for 6060 events, want %d", len(lines), verboseLines+1)
	}
	if want := "      … 6000 events more: 3000 CONN_OPEN, 3000 CONN_CLOSED (the whole log is in ev/logs)"; lines[verboseLines/2] != want {
		t.Errorf("summary %q, want %q", lines[verboseLines/2], want)
	}
	b.Reset()
	printCapped(&b, verboseLines, line, kind, "event", "")
	if n := strings.Count(b.String(), "\n"); n != verboseLines {
		t.Errorf("%d lines for %d events, want every one", n, verboseLines)
	}
}
