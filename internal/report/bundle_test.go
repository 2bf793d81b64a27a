package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBundlesRoundTrip: what writeBundles packs, ReadLogs gives back byte
// for byte, whatever the logs hold (a line that looks like a bundle's
// own, no final newline, nothing at all), each column's logs in its
// scenario's bundle, split past MaxBundleBytes.
func TestBundlesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("x", MaxBundleBytes/3) + "\n"
	files := map[string]string{
		"server-plain.log":             "{\"msg\":\"LISTEN\"}\n",
		"trace-plain.jsonl":            "no final newline",
		"adapter-plain.log":            "",
		"server-tricky.log":            "==> server-other.log (3 bytes) <==\nabc\n#rpcbench logs: the logs of scenario x\n",
		"server-grpc_x_go_default.log": big,
		"server-grpc_x_go_retry.log":   big,
		"server-grpc_x_js_default.log": big,
		"server-grpc_x_js_retry.log":   big,
		"unrelated.txt":                "of no case",
	}
	writeFiles(t, dir, files)
	scenarioOf := func(c string) string {
		if strings.HasPrefix(c, "grpc_x_") {
			return "grpc_x"
		}
		return ""
	}
	if err := writeBundles(dir, scenarioOf); err != nil {
		t.Fatal(err)
	}
	want := []string{"grpc_x-2.logs", "grpc_x.logs", "plain.logs", "tricky.logs", "unrelated.logs"}
	if diff := cmp.Diff(want, listDir(t, dir)); diff != "" {
		t.Errorf("logs/ (-want +got):\n%s", diff)
	}
	for _, name := range want {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() > MaxBundleBytes+4096 {
			t.Errorf("%s: %v, %v; want at most about %d bytes", name, fi, err, MaxBundleBytes)
		}
	}
	got, err := ReadLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	gotText := map[string]string{}
	for k, v := range got {
		gotText[k] = string(v)
	}
	if diff := cmp.Diff(files, gotText); diff != "" {
		t.Errorf("ReadLogs (-want +got):\n%s", diff)
	}
}

// TestReadLogsBadBundle: a bundle cut short, or that is not one, is an
// error naming it; the other files are still read.
func TestReadLogsBadBundle(t *testing.T) {
	for _, tt := range []struct{ name, content, want string }{
		{"not a bundle", "hello\n", "not a logs bundle"},
		{"cut short", bundleHead + "a, ...\n==> server-a.log (100 bytes) <==\nshort\n", "fewer than the 100 bytes"},
		{"bad line", bundleHead + "a, ...\n==> server-a.log <==\n", "want ==> NAME (N bytes) <=="},
		{"a path", bundleHead + "a, ...\n==> ../a.log (0 bytes) <==\n\n", "want ==> NAME (N bytes) <=="},
		{"twice", bundleHead + "a, ...\n==> server-a.log (0 bytes) <==\n\n==> server-a.log (0 bytes) <==\n\n", "twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"a.logs": tt.content, "server-b.log": "b"})
			got, err := ReadLogs(dir)
			if err == nil || !strings.Contains(err.Error(), "a.logs") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadLogs error %v, want it to name a.logs and say %q", err, tt.want)
			}
			if string(got["server-b.log"]) != "b" {
				t.Errorf("ReadLogs = %q, want server-b.log read beside the bad bundle", got)
			}
		})
	}
	if got, err := ReadLogs(filepath.Join(t.TempDir(), "none")); err != nil || len(got) != 0 {
		t.Errorf("ReadLogs(missing) = %v, %v; want nothing, no error", got, err)
	}
}
