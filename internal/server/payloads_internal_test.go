package server

import (
	"testing"
	"unsafe"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// TestPayloadPoolRecycles: a payload given back is the memory the next
// get of its class returns, so that many requests of one size reuse one
// buffer; a payload the decoder did not take from the pool (small, or of
// a capacity no class has) is not kept. The pool's classes are channels,
// so this does not depend on the collector.
func TestPayloadPoolRecycles(t *testing.T) {
	for _, tt := range []struct {
		name      string
		put       []byte
		getLen    int
		wantReuse bool
	}{
		{"smallest class", make([]byte, proto.SmallPayload+1, 2<<10), 2000, true},
		{"a class's full size", make([]byte, 4<<10), 3000, true},
		{"largest class", make([]byte, proto.MaxFrameLen-100, 64<<10), 40000, true},
		{"small payload, carved from a shared block", make([]byte, proto.SmallPayload, 2<<10), 2000, false},
		{"capacity of no class", make([]byte, 3000), 3000, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPayloadPool()
			p.put(tt.put)
			got := p.get(tt.getLen)
			if len(got) != tt.getLen {
				t.Errorf("get(%d): got length %d, want %d", tt.getLen, len(got), tt.getLen)
			}
			if reused := unsafe.SliceData(got) == unsafe.SliceData(tt.put); reused != tt.wantReuse {
				t.Errorf("get after put: got the buffer put back %v, want %v", reused, tt.wantReuse)
			}
		})
	}

	t.Run("many requests of one size", func(t *testing.T) {
		p := newPayloadPool()
		seen := map[*byte]bool{}
		for range 1000 {
			b := p.get(16 << 10)
			seen[unsafe.SliceData(b)] = true
			p.put(b)
		}
		if len(seen) != 1 {
			t.Errorf("1000 gets of 16 KiB, each put back: got %d distinct buffers, want 1", len(seen))
		}
	})
}
