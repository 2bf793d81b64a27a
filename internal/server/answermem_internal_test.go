package server

import "testing"

// TestAnswerMemory: only memory that starts where the lent scratch does
// is taken back as scratch; the request's payload, the handler's own
// memory and scratch that append moved are read-only answers (lent), and
// scratch then stays, grown only for an answer that did not fit and was
// not the request's.
func TestAnswerMemory(t *testing.T) {
	scratch := make([]byte, 0, 64)
	req := []byte("account=a payload")
	owned := []byte("the handler's cached answer, never changed")
	big := make([]byte, 100)
	tests := []struct {
		name      string
		payload   []byte
		scratch   []byte
		req       []byte
		wantLent  bool
		wantStart []byte // what the next scratch starts at; nil: new memory
		wantCap   int
	}{
		{"scratch grown in place", append(scratch, "answer"...), scratch, req, false, scratch, 64},
		{"the request's payload", req, scratch, req, true, scratch, 64},
		{"a slice of the request's payload", req[:7], scratch, req, true, scratch, 64},
		{"the tail of the request's payload", req[8:], scratch, req, true, scratch, 64},
		{"inside scratch, not at its start", append(scratch, "xxanswer"...)[2:], scratch, req, false, scratch, 64},
		{"the handler's own memory, fitting", owned, scratch, req, true, scratch, 64},
		{"the handler's own memory, larger", big, scratch, req, true, nil, 100},
		{"a request payload larger than scratch", big, scratch, big, true, scratch, 64},
		{"no scratch yet, answer appended to nil", append([]byte(nil), "answer"...), nil, req, true, nil, 6},
		{"empty answer", nil, scratch, req, true, scratch, 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, lent := answerMemory(tt.payload, tt.scratch, tt.req)
			if lent != tt.wantLent {
				t.Errorf("lent: got %v, want %v", lent, tt.wantLent)
			}
			if len(next) != 0 && !sameStart(next, tt.payload) {
				t.Errorf("next scratch has length %d, want 0 or the answer itself", len(next))
			}
			switch {
			case tt.wantStart != nil && !sameStart(next, tt.wantStart):
				t.Errorf("next scratch is other memory than the one lent")
			case tt.wantStart == nil && (sameStart(next, tt.payload) || sameStart(next, scratch)):
				t.Errorf("next scratch is the answer's or the old scratch's memory, want new memory")
			}
			if cap(next) != tt.wantCap {
				t.Errorf("next scratch's cap: got %d, want %d", cap(next), tt.wantCap)
			}
			if sameStart(next, tt.req) || sameStart(next, owned) {
				t.Errorf("next scratch is memory the transport only reads")
			}
		})
	}
}
