package proto

import "io"

// DefaultReadSize is the read buffer size NewFrameReader uses when given 0.
const DefaultReadSize = 32 << 10

// FrameReader reads the frames one side of a connection sends. It is the
// only read loop over a Decoder in the project: every connection reader
// uses it, so that the rules below hold everywhere.
//
//   - Frames are returned in the order they arrived, and each owns its
//     memory (see Decoder.Feed).
//   - A frame of the wrong type for the direction (a RESPONSE or DRAIN
//     sent to a server, a REQUEST sent to a client) is a *ProtocolError,
//     like any other bad frame. A reader that wants RESPONSE frames also
//     accepts DRAIN, the other frame a server sends.
//   - After the first error, read or protocol, the FrameReader is dead:
//     every later call returns that error and reads nothing more.
//
// A FrameReader is not safe for concurrent use.
type FrameReader struct {
	r    io.Reader
	want Type
	// buf is the read buffer. It starts at firstReadSize and doubles,
	// up to size, each time a read fills it: an idle connection pins a
	// few hundred bytes, a busy one reads in large pieces.
	buf  []byte
	size int
	dec  Decoder
	err  error
	// held are frames ReadBatch decoded that ReadFrame has not returned.
	held []Frame
	// frames is the slice ReadBatch returns, reused from call to call.
	frames []Frame
}

// firstReadSize is the size of a FrameReader's first read buffer.
const firstReadSize = 512

// NewFrameReader returns a FrameReader that reads r in reads of up to size
// bytes (0 means DefaultReadSize) and accepts only frames of type want.
func NewFrameReader(r io.Reader, want Type, size int) *FrameReader {
	if size <= 0 {
		size = DefaultReadSize
	}
	return &FrameReader{r: r, want: want, buf: make([]byte, min(size, firstReadSize)), size: size}
}

// SetAlloc sets the Decoder's Alloc: where payloads of more than
// SmallPayload bytes get their memory. Call it before the first read.
func (fr *FrameReader) SetAlloc(alloc func(n int) []byte) { fr.dec.Alloc = alloc }

// ReadBatch makes one Read and returns the frames it completed, in order;
// there may be none when the read ended inside a frame. err is the read's
// error (io.EOF included) or a *ProtocolError; the frames completed before
// a bad one are returned with it and are valid. The slice is reused: it
// is valid until the next call of ReadBatch or ReadFrame, while the
// frames in it, copied out, own their memory for good.
func (fr *FrameReader) ReadBatch() ([]Frame, error) {
	if len(fr.held) > 0 {
		frames := fr.held
		fr.held = nil
		return frames, nil
	}
	if fr.err != nil {
		return nil, fr.err
	}
	n, rerr := fr.r.Read(fr.buf)
	// Cleared, so that the last batch's payloads are not kept alive.
	clear(fr.frames)
	frames, derr := fr.dec.FeedAppend(fr.frames[:0], fr.buf[:n])
	fr.frames = frames
	if n == len(fr.buf) && n < fr.size {
		// The Decoder kept nothing of buf: a new one costs no copy.
		fr.buf = make([]byte, min(2*n, fr.size))
	}
	for i := range frames {
		if got := frames[i].Type; !fr.accepts(got) {
			frames = frames[:i]
			derr = fr.wrongType(got)
			fr.dec.fail(derr)
			break
		}
	}
	switch {
	case derr != nil:
		fr.err = derr
	case rerr != nil:
		fr.err = rerr
	}
	return frames, fr.err
}

// ReadFrame returns the next frame, reading as often as it takes. Bytes
// read past that frame stay buffered for the next call.
func (fr *FrameReader) ReadFrame() (Frame, error) {
	for len(fr.held) == 0 {
		if fr.err != nil {
			return Frame{}, fr.err
		}
		frames, _ := fr.ReadBatch()
		fr.held = frames
	}
	f := fr.held[0]
	fr.held = fr.held[1:]
	return f, nil
}

// Buffered returns how many bytes of an incomplete frame are held: after
// a read error, the bytes of a frame that will never complete.
func (fr *FrameReader) Buffered() int { return fr.dec.Buffered() }

// accepts reports whether a frame of type t may come this way.
func (fr *FrameReader) accepts(t Type) bool {
	return t == fr.want || fr.want == TypeResponse && t == TypeDrain
}

func (fr *FrameReader) wrongType(got Type) error {
	if fr.want == TypeRequest {
		return protocolErrorf("%v frame from client", got)
	}
	return protocolErrorf("%v frame from server", got)
}
