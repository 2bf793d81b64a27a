package grpc

import (
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/expectations"
	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/pins"
	"github.com/rpcbench/rpcbench/internal/report"
)

// committedOutput is the grpc group's committed evidence.
const committedOutput = "../../../evidence/grpc/output.txt"

// TestSometimesPinsBacked: every pin marked sometimes, of every stack,
// is backed by the committed evidence: its case tallied the invariant
// over repeated trials and shows both outcomes (judge.UnbackedSometimes).
// A pin it does not back is stale: remove it, make it a plain pin, or
// re-run the evidence until it shows what the pin says.
func TestSometimesPinsBacked(t *testing.T) {
	f, err := os.Open(committedOutput)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := report.ReadOutput(f)
	if err != nil {
		t.Fatalf("%s: %v", committedOutput, err)
	}
	files, err := fs.Glob(expectations.Files, "*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("expectations files: %v (%d found)", err, len(files))
	}
	for _, name := range files {
		p, err := grpcSuite().LoadPins(strings.TrimSuffix(name, ".txt"))
		if err != nil {
			t.Fatal(err)
		}
		for _, why := range judge.UnbackedSometimes(lines, p) {
			t.Errorf("%s (evidence %s)", why, committedOutput)
		}
	}
}

// TestUnbackedSometimes: a sometimes pin is backed only by a tally that
// shows both outcomes; one trial a run, one outcome only, a missing case
// or a tally that cannot be read are each named; a plain pin is never
// asked for a tally.
func TestUnbackedSometimes(t *testing.T) {
	const pinned = "server grpcserver_timeout_1m srv_ok_iff_executed sometimes # a race\n" +
		"server grpcserver_timeout_1u srv_ok_iff_executed # every run\n"
	const head = "CASE grpcserver_timeout_1m_grpcio FINDING scenario=grpcserver_timeout_1m stack=grpcio config=server "
	tests := []struct {
		name, output string
		want         string // in the one sentence; "" for none
	}{
		{"both outcomes", head + "srv_ok_iff_executed_tally~=held=99,violated=1 srv_ok_iff_executed:=sometimes", ""},
		{"only held", head + "srv_ok_iff_executed_tally~=held=100,violated=0 srv_ok_iff_executed:=sometimes", "shows one outcome only (held=100,violated=0): the pin is stale"},
		{"only violated", head + "srv_ok_iff_executed_tally~=held=0,violated=100 srv_ok_iff_executed:=sometimes", "shows one outcome only"},
		{"one trial a run", head + "srv_ok_iff_executed:=sometimes srv_ok_iff_executed_this_run~=violated", "records no tally of it"},
		{"unreadable tally", head + "srv_ok_iff_executed_tally~=99/1 srv_ok_iff_executed:=sometimes", `tally "99/1"`},
		{"another stack's case", strings.Replace(head, "stack=grpcio", "stack=grpc-go", 1) + "srv_ok_iff_executed_tally~=held=99,violated=1", "no case of it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := pins.Parse("grpcio", "grpcio.txt", strings.NewReader(pinned), func(pins.Key) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			l, err := report.Parse(tt.output)
			if err != nil {
				t.Fatal(err)
			}
			got := judge.UnbackedSometimes([]report.Line{l}, p)
			switch {
			case tt.want == "" && len(got) != 0:
				t.Errorf("got %q, want none", got)
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want) || !strings.Contains(got[0], "grpcio.txt:1:")):
				t.Errorf("got %q, want one naming grpcio.txt:1 and saying %q", got, tt.want)
			}
		})
	}
}
