package serverapi_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/serverapi"
)

// distinct returns Counters whose fields all differ, so that a counter
// decoded into the wrong field shows.
func distinct() serverapi.Counters {
	var c serverapi.Counters
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		v.Field(i).SetInt(int64(100 + i))
	}
	return c
}

func TestCountersRoundTrip(t *testing.T) {
	for _, c := range []serverapi.Counters{{}, distinct()} {
		text := c.String()
		got, err := serverapi.ParseCounters([]byte(text))
		if err != nil {
			t.Fatalf("ParseCounters(%q): %v", text, err)
		}
		if diff := cmp.Diff(c, got); diff != "" {
			t.Errorf("ParseCounters(String()) (-want +got):\n%s", diff)
		}
	}
}

// TestCounterNames: String names every counter once, in CounterNames'
// sorted order, and there is a name for every field.
func TestCounterNames(t *testing.T) {
	names := serverapi.CounterNames()
	if !slices.IsSorted(names) {
		t.Errorf("CounterNames() = %v, want it sorted", names)
	}
	if got, want := len(names), reflect.TypeFor[serverapi.Counters]().NumField(); got != want {
		t.Errorf("CounterNames() has %d names, want one per Counters field (%d)", got, want)
	}
	var inString []string
	for _, tok := range strings.Fields(distinct().String()) {
		name, _, _ := strings.Cut(tok, "=")
		inString = append(inString, name)
	}
	if diff := cmp.Diff(names, inString); diff != "" {
		t.Errorf("names in String() (-want CounterNames +got):\n%s", diff)
	}
}

func TestParseCountersRejects(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(serverapi.Fields)
		wantErr string // substring of the error
	}{
		{"missing_counter", func(fs serverapi.Fields) { delete(fs, "exec.debit") }, "counter exec.debit missing"},
		{"unknown_counter", func(fs serverapi.Fields) { fs["requests.put"] = "1" }, "unknown counters"},
		{"renamed_counter", func(fs serverapi.Fields) { fs["dedup"] = fs["dedup_hits"]; delete(fs, "dedup_hits") }, "counter dedup_hits missing"},
		{"not_an_integer", func(fs serverapi.Fields) { fs["expired"] = "x" }, `counter expired="x" is not an integer`},
		{"fraction", func(fs serverapi.Fields) { fs["expired"] = "1.5" }, `counter expired="1.5" is not an integer`},
		{"empty_value", func(fs serverapi.Fields) { fs["expired"] = "" }, `counter expired="" is not an integer`},
		{"empty", func(fs serverapi.Fields) { clear(fs) }, "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, err := serverapi.ParseFields([]byte(distinct().String()))
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(fs)
			text := fs.String()
			c, err := serverapi.ParseCounters([]byte(text))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "serverapi: ") {
				t.Errorf("ParseCounters(%q) error = %v, want \"serverapi: ...%s...\"", text, err, tt.wantErr)
			}
			if c != (serverapi.Counters{}) {
				t.Errorf("ParseCounters returned %+v with its error, want the zero Counters", c)
			}
		})
	}
	// ParseFields keeps the last of two equal keys; a counter sent twice
	// is not a counter sent once.
	text := distinct().String() + " expired=0"
	if _, err := serverapi.ParseCounters([]byte(text)); err == nil || !strings.Contains(err.Error(), "counter expired sent twice") {
		t.Errorf("ParseCounters(%q) error = %v, want one saying counter expired was sent twice", text, err)
	}
	text = distinct().String() + " junk"
	if _, err := serverapi.ParseCounters([]byte(text)); err == nil || !strings.Contains(err.Error(), `"junk" is not key=value`) {
		t.Errorf("ParseCounters(%q) error = %v, want one saying \"junk\" is not key=value", text, err)
	}
}
