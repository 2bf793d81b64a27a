package proto_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// FuzzDecoder feeds arbitrary bytes to a Decoder, whole and split at cut.
// Invariants:
//   - it never panics;
//   - the frames it returns re-encode with AppendFrame to exactly the bytes
//     they were decoded from, so decoder and encoder agree on every rule;
//   - without an error, every byte is either in a frame or Buffered;
//   - an error is a *ProtocolError;
//   - splitting the input changes neither the frames nor the error.
func FuzzDecoder(f *testing.F) {
	// Seeds stay small: the minimizer's work grows with the square of an
	// input's length, and a large seed stalls every worker for a minute.
	var small []proto.Frame
	for _, fr := range sampleFrames() {
		if fr.EncodedLen() < 64 {
			small = append(small, fr)
		}
	}
	valid := encode(f, small...)
	one := encode(f, sampleFrames()[0])
	badMagic := bytes.Clone(one)
	badMagic[4], badMagic[5] = 0xde, 0xad
	for _, seed := range [][]byte{
		nil,
		one,
		valid,
		one[:len(one)/2],
		valid[:len(valid)-1],
		append(bytes.Clone(one), badMagic...),
		binary.BigEndian.AppendUint32(nil, math.MaxInt32),
		binary.BigEndian.AppendUint32(nil, proto.MaxFrameLen+1),
		append(bytes.Clone(one), 0, 0, 0, 23),
		[]byte("GET / HTTP/1.1\r\nHost: example\r\n\r\n"),
		bytes.Repeat([]byte{0xff}, 64),
	} {
		f.Add(seed, uint(len(seed)/2))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint) {
		var whole proto.Decoder
		frames, err := whole.Feed(data)

		reencoded, aerr := appendAll(frames)
		if aerr != nil {
			t.Fatalf("a decoded frame does not re-encode: %v", aerr)
		}
		if !bytes.HasPrefix(data, reencoded) {
			t.Fatalf("re-encoded frames differ from the bytes consumed:\ngot  % x\nwant % x", reencoded, data[:min(len(data), len(reencoded))])
		}
		if err == nil {
			if got, want := len(reencoded)+whole.Buffered(), len(data); got != want {
				t.Fatalf("consumed %d + buffered %d bytes, want %d", len(reencoded), whole.Buffered(), want)
			}
		} else {
			var pe *proto.ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *ProtocolError", err, err)
			}
		}

		k := int(cut % uint(len(data)+1))
		var split proto.Decoder
		got, err1 := split.Feed(data[:k])
		more, err2 := split.Feed(data[k:])
		got = append(got, more...)
		if err1 != nil && err2 != err1 {
			t.Fatalf("Feed after error %v returned %v", err1, err2)
		}
		// cmp.Diff only to explain a mismatch: it is too slow to run on
		// every input, which would stall the minimizer.
		if !slices.EqualFunc(frames, got, sameFrame) {
			t.Fatalf("split at %d: frames differ from the unsplit feed (-whole +split):\n%s", k, cmp.Diff(frames, got, bytesEqual))
		}
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("split at %d: error %v, unsplit feed error %v", k, err2, err)
		}
	})
}

func sameFrame(a, b proto.Frame) bool {
	return a.Type == b.Type && a.ID == b.ID && a.BudgetMs == b.BudgetMs && a.Status == b.Status &&
		a.Method == b.Method && a.Key == b.Key && bytes.Equal(a.Payload, b.Payload)
}

func appendAll(frames []proto.Frame) ([]byte, error) {
	var b []byte
	for i := range frames {
		var err error
		if b, err = proto.AppendFrame(b, &frames[i]); err != nil {
			return nil, err
		}
	}
	return b, nil
}
