package grpc

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rpcbench/rpcbench/expectations"
	"github.com/rpcbench/rpcbench/internal/cases/judge"
	"github.com/rpcbench/rpcbench/internal/pins"
	"github.com/rpcbench/rpcbench/internal/report"
)

// committedOutput is the grpc group's committed evidence, and
// witnessOutputs the committed runs that witness a rare violation.
const (
	committedOutput = "../../../evidence/grpc/output.txt"
	witnessOutputs  = "../../../evidence/witness/*/output.txt"
)

// readLines reads the CASE lines of an output.txt.
func readLines(t *testing.T, path string) []report.Line {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := report.ReadOutput(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return lines
}

// TestSometimesPinsBacked: every pin marked sometimes, of every stack,
// is backed by the committed evidence: its case tallied the invariant
// over repeated trials and shows both outcomes (judge.UnbackedSometimes).
// A pin it does not back is stale: remove it, make it a plain pin, or
// re-run the evidence until it shows what the pin says. A witness run,
// committed under evidence/witness/, backs one the group's run seldom
// shows, for the stack version it ran.
func TestSometimesPinsBacked(t *testing.T) {
	lines := readLines(t, committedOutput)
	paths, err := filepath.Glob(witnessOutputs)
	if err != nil {
		t.Fatal(err)
	}
	var witness []report.Line
	for _, p := range paths {
		witness = append(witness, readLines(t, p)...)
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
		for _, why := range judge.UnbackedSometimes(lines, witness, p) {
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
			got := judge.UnbackedSometimes([]report.Line{l}, nil, p)
			switch {
			case tt.want == "" && len(got) != 0:
				t.Errorf("got %q, want none", got)
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want) || !strings.Contains(got[0], "grpcio.txt:1:")):
				t.Errorf("got %q, want one naming grpcio.txt:1 and saying %q", got, tt.want)
			}
		})
	}
}

// TestWitnessBacksSometimes: a witness backs a sometimes pin the
// group's evidence does not, only with both outcomes and only for the
// stack version the group's evidence names.
func TestWitnessBacksSometimes(t *testing.T) {
	const pinned = "server grpcserver_timeout_0n srv_expired_not_executed sometimes # a race\n"
	const head = "CASE grpcserver_timeout_0n_grpcio PASS scenario=grpcserver_timeout_0n stack=grpcio config=server "
	parse := func(s string) report.Line {
		l, err := report.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	p, err := pins.Parse("grpcio", "grpcio.txt", strings.NewReader(pinned), func(pins.Key) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	group := []report.Line{parse(head + "version=1.51.1 srv_expired_not_executed_tally~=held=100,violated=0")}
	for _, tt := range []struct {
		name, witness string
		backed        bool
	}{
		{"both outcomes, same version", head + "version=1.51.1 srv_expired_not_executed_tally~=held=99,violated=1", true},
		{"another version", head + "version=1.60.0 srv_expired_not_executed_tally~=held=99,violated=1", false},
		{"one outcome", head + "version=1.51.1 srv_expired_not_executed_tally~=held=100,violated=0", false},
	} {
		got := judge.UnbackedSometimes(group, []report.Line{parse(tt.witness)}, p)
		if (len(got) == 0) != tt.backed {
			t.Errorf("%s: got %q, want backed %v", tt.name, got, tt.backed)
		}
	}
	if got := judge.UnbackedSometimes(group, nil, p); len(got) != 1 {
		t.Errorf("no witness: got %q, want the pin named", got)
	}
}
