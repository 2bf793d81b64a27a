package proto

import "encoding/binary"

// A Decoder turns a byte stream into frames. Feed it whatever a read
// returned; it returns every frame completed so far and keeps the rest.
//
// The length prefix is checked as soon as its 4 bytes arrive, before any
// memory is sized from it. After the first error the Decoder is dead: every
// later Feed returns the same error and interprets nothing.
type Decoder struct {
	// Alloc, when set, supplies the memory of every payload of more than
	// SmallPayload bytes: a slice of length n (its capacity may be
	// larger) that nothing else uses. Nil: a fresh allocation each.
	Alloc func(n int) []byte

	buf []byte // unconsumed bytes; never holds a complete frame between calls
	err error

	// names holds recently decoded method names, so that a stream of
	// calls to a few methods does not allocate a string per frame.
	names [4]string
	next  int
	// block is the unused tail of the memory payloads are copied into.
	// Payloads take disjoint pieces of it that are never written again.
	block []byte
	// blockSize is the size of the next block: it starts small and
	// doubles up to payloadBlock, so that a connection that made one call
	// and went idle pins a few hundred bytes, not a whole block.
	blockSize int
}

// payloadBlock is the size of the blocks small payloads are carved from:
// one allocation serves many frames, and a payload kept by a caller pins
// at most this much.
const payloadBlock = 4 << 10

// SmallPayload is the largest payload carved from a shared block; a larger
// one has memory of its own (Decoder.Alloc).
const SmallPayload = payloadBlock / 4

// firstPayloadBlock is the size of a Decoder's first block.
const firstPayloadBlock = 256

// Feed appends p to the stream and decodes every complete frame in it. The
// returned frames own their memory: nothing in them aliases p or the
// Decoder's buffer, and nothing the Decoder does later writes to it. Small
// payloads may share one allocation, each capped at its length so that
// appending to one never touches another. p is not retained.
func (d *Decoder) Feed(p []byte) ([]Frame, error) { return d.FeedAppend(nil, p) }

// FeedAppend is Feed that appends the frames to dst and returns the
// extended slice, so that a caller reusing dst allocates no slice per
// call. The frames appended own their memory as Feed's do.
func (d *Decoder) FeedAppend(dst []Frame, p []byte) ([]Frame, error) {
	frames := dst
	if d.err != nil {
		return frames, d.err
	}
	data := p
	if len(d.buf) > 0 {
		d.buf = append(d.buf, p...)
		data = d.buf
	}
	off := 0
	for len(data)-off >= lenPrefix {
		n := int(binary.BigEndian.Uint32(data[off:]))
		if n < MinFrameLen || n > MaxFrameLen {
			d.fail(protocolErrorf("frame length %d outside [%d,%d]", uint32(n), MinFrameLen, MaxFrameLen))
			return frames, d.err
		}
		if len(data)-off-lenPrefix < n {
			break
		}
		f, err := d.parseBody(data[off+lenPrefix : off+lenPrefix+n])
		if err != nil {
			d.fail(err)
			return frames, d.err
		}
		frames = append(frames, f)
		off += lenPrefix + n
	}
	rest := data[off:]
	switch {
	case len(rest) == 0:
		d.buf = d.buf[:0]
	case len(d.buf) > 0:
		// rest is a suffix of d.buf. When nothing was consumed it is all of
		// d.buf already; copying it anyway would make a frame arriving in
		// small reads cost time quadratic in its length.
		if off > 0 {
			d.buf = append(d.buf[:0], rest...)
		}
	default:
		d.buf = append(d.buf, rest...)
	}
	return frames, nil
}

// Buffered returns how many bytes of an incomplete frame the Decoder holds.
func (d *Decoder) Buffered() int { return len(d.buf) }

// Err returns the error that killed the Decoder, or nil.
func (d *Decoder) Err() error { return d.err }

func (d *Decoder) fail(err error) {
	d.err = err
	d.buf = nil
}

// name returns b as a string, reusing a recently returned one if equal.
func (d *Decoder) name(b []byte) string {
	for _, s := range d.names {
		if s == string(b) {
			return s
		}
	}
	s := string(b)
	d.names[d.next%len(d.names)] = s
	d.next++
	return s
}

// payload returns a copy of b in memory owned by the frame.
func (d *Decoder) payload(b []byte) []byte {
	if len(b) > SmallPayload {
		if d.Alloc == nil {
			return append([]byte(nil), b...)
		}
		p := d.Alloc(len(b))
		copy(p, b)
		return p
	}
	if len(d.block) < len(b) {
		d.blockSize = min(max(2*d.blockSize, firstPayloadBlock), payloadBlock)
		d.block = make([]byte, max(d.blockSize, len(b)))
	}
	p := d.block[:len(b):len(b)]
	d.block = d.block[len(b):]
	copy(p, b)
	return p
}

// parseBody parses the n bytes that follow a length prefix.
func (d *Decoder) parseBody(b []byte) (Frame, error) {
	var f Frame
	if m := binary.BigEndian.Uint16(b); m != Magic {
		return f, protocolErrorf("bad magic %#04x", m)
	}
	if v := b[2]; v != Version {
		return f, protocolErrorf("unsupported version %d", v)
	}
	f.Type = Type(b[3])
	if f.Type != TypeRequest && f.Type != TypeResponse && f.Type != TypeDrain {
		return f, protocolErrorf("bad frame type %d", b[3])
	}
	f.ID = binary.BigEndian.Uint64(b[4:])
	if f.ID == 0 && f.Type != TypeDrain {
		return f, protocolErrorf("request id 0")
	}
	f.BudgetMs = binary.BigEndian.Uint32(b[12:])
	f.Status = Status(b[16])
	if !f.Status.onWire() {
		return f, protocolErrorf("bad status %d", b[16])
	}
	if f.Type == TypeRequest && f.Status != StatusOK {
		return f, protocolErrorf("request with status %d", b[16])
	}
	if f.Type == TypeDrain && f.Status != StatusOK {
		return f, protocolErrorf("drain with status %d", b[16])
	}
	ml, kl := int(b[17]), int(b[18])
	if ml < 1 || ml > MaxMethodLen {
		return f, protocolErrorf("method length %d outside [1,%d]", ml, MaxMethodLen)
	}
	if kl > MaxKeyLen {
		return f, protocolErrorf("key length %d outside [0,%d]", kl, MaxKeyLen)
	}
	// len(b) >= MinFrameLen = fixedLen+1, so the method's first byte exists;
	// the rest is checked against the declared total.
	if headLen+ml+kl+4 > len(b) {
		return f, protocolErrorf("method and key (%d bytes) overrun frame length %d", ml+kl, len(b))
	}
	p := headLen
	f.Method = d.name(b[p : p+ml])
	p += ml
	if kl > 0 {
		f.Key = string(b[p : p+kl])
	}
	p += kl
	pl := int(binary.BigEndian.Uint32(b[p:]))
	p += 4
	if pl != len(b)-p {
		return f, protocolErrorf("frame length %d does not match its parts (payload %d)", len(b), pl)
	}
	if pl > 0 {
		f.Payload = d.payload(b[p:])
	}
	return f, nil
}
