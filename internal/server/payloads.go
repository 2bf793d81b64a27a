package server

import (
	"math/bits"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// payloadPool recycles the memory of large request payloads, which the
// decoder would otherwise allocate afresh for every request and leave to
// the collector: at 16 KiB a request, the allocation and its collection
// cost the server more than the copy. A payload of more than
// proto.SmallPayload bytes gets a buffer of the next power of two from
// its class, and goes back once nothing refers to it: when its
// request's answer is queued (copied), or written, when the answer is the
// payload itself (transport.Handler.Execute's contract says the handler keeps no
// other reference past Execute).
//
// Each class is a buffered channel: a put to a full class, or of memory
// of no class, leaves it to the collector, so the pool never holds more
// than poolClassBytes per class.
type payloadPool struct {
	classes [poolClasses]chan []byte
}

const (
	// poolMinShift is the smallest class's size, log2: the smallest
	// payload the decoder asks for is proto.SmallPayload+1 bytes.
	poolMinShift = 11 // 2 KiB
	poolClasses  = 6  // 2 KiB .. 64 KiB, the largest frame
	// poolClassBytes bounds the memory one class holds idle.
	poolClassBytes = 1 << 20
)

func newPayloadPool() *payloadPool {
	p := &payloadPool{}
	for i := range p.classes {
		p.classes[i] = make(chan []byte, max(16, poolClassBytes>>(poolMinShift+i)))
	}
	return p
}

// class returns the class whose buffers hold n bytes, or -1 if none does.
func class(n int) int {
	if n <= 0 {
		return -1
	}
	c := max(bits.Len(uint(n-1))-poolMinShift, 0)
	if c >= poolClasses {
		return -1
	}
	return c
}

// get returns a buffer of length n (proto.Decoder's Alloc).
func (p *payloadPool) get(n int) []byte {
	c := class(n)
	if c < 0 {
		return make([]byte, n)
	}
	select {
	case b := <-p.classes[c]:
		return b[:n]
	default:
		return make([]byte, n, 1<<(poolMinShift+c))
	}
}

// put gives back b, a payload the decoder took from get, once nothing
// refers to it. A payload the decoder did not take from the pool (at
// most proto.SmallPayload bytes, carved from a shared block) is left
// alone, as is memory whose capacity is no class's size.
func (p *payloadPool) put(b []byte) {
	if len(b) <= proto.SmallPayload {
		return
	}
	c := class(cap(b))
	if c < 0 || cap(b) != 1<<(poolMinShift+c) {
		return
	}
	select {
	case p.classes[c] <- b[:0]:
	default:
	}
}
