package outcome

import (
	"errors"
	"testing"
)

func TestParseRoundTrip(t *testing.T) {
	for _, o := range []Outcome{Holds, Violated, Unsupported, Sometimes} {
		got, err := Parse(o.String())
		if err != nil || got != o {
			t.Errorf("Parse(%q) = %v, %v; want %v", o.String(), got, err, o)
		}
		b, err := o.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Outcome
		if err := back.UnmarshalText(b); err != nil || back != o {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", b, back, err, o)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, s := range []string{"", "held", "Holds", "unknown_outcome_9"} {
		if o, err := Parse(s); !errors.Is(err, ErrUnknown) {
			t.Errorf("Parse(%q) = %v, %v; want ErrUnknown", s, o, err)
		}
	}
}

func TestNoneAndUnknown(t *testing.T) {
	if s := Outcome(0).String(); s != "" {
		t.Errorf("none is %q, want \"\"", s)
	}
	if s := Outcome(9).String(); s != "unknown_outcome_9" {
		t.Errorf("Outcome(9) is %q, want unknown_outcome_9", s)
	}
	if _, err := Outcome(9).MarshalText(); err == nil {
		t.Error("MarshalText of an unknown outcome wrote it")
	}
	var o Outcome = Holds
	if err := o.UnmarshalText(nil); err != nil || o != 0 {
		t.Errorf("UnmarshalText(\"\") = %v, %v; want none", o, err)
	}
}

func TestBroken(t *testing.T) {
	for o, want := range map[Outcome]bool{Holds: false, Violated: true, Unsupported: false, Sometimes: true, 0: false} {
		if got := o.Broken(); got != want {
			t.Errorf("%v.Broken() = %v, want %v", o, got, want)
		}
	}
}
