package proto_test

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/rpcbench/rpcbench/internal/proto"
)

func benchFrame(payload int) proto.Frame {
	return proto.Frame{Type: proto.TypeResponse, ID: 12345, Status: proto.StatusOK, Method: "debit", Key: "key-0001",
		Payload: bytes.Repeat([]byte("x"), payload)}
}

// BenchmarkDecoder decodes a stream of about 256 KiB fed in reads of a
// given size: 32 KiB like the client's read buffer, and 13 bytes like the
// worst chunk-mode server, into a reused slice of frames as FrameReader
// does. Besides MB/s it reports frames/s and allocations per frame: each
// frame's key is a string of its own (keys are unique per request), and
// payloads share 4 KiB blocks unless they are larger than 1 KiB.
func BenchmarkDecoder(b *testing.B) {
	for _, payload := range []int{16, 1024, 16 << 10, 60 << 10} {
		for _, read := range []int{32 << 10, 13} {
			b.Run(fmt.Sprintf("payload=%d/read=%d", payload, read), func(b *testing.B) {
				f := benchFrame(payload)
				n := max(1, (256<<10)/f.EncodedLen())
				stream := encode(b, slicesRepeat(f, n)...)
				b.SetBytes(int64(len(stream)))
				b.ReportAllocs()
				var d proto.Decoder
				var frames []proto.Frame
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for b.Loop() {
					got := 0
					for off := 0; off < len(stream); off += read {
						// Into a reused slice, as FrameReader reads.
						var err error
						if frames, err = d.FeedAppend(frames[:0], stream[off:min(off+read, len(stream))]); err != nil {
							b.Fatal(err)
						}
						got += len(frames)
					}
					if got != n {
						b.Fatalf("decoded %d frames, want %d", got, n)
					}
				}
				runtime.ReadMemStats(&after)
				decoded := float64(n) * float64(b.N)
				b.ReportMetric(decoded/b.Elapsed().Seconds(), "frames/s")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/decoded, "allocs/frame")
			})
		}
	}
}

func BenchmarkAppendFrame(b *testing.B) {
	for _, payload := range []int{16, 1024, 16 << 10} {
		b.Run(fmt.Sprintf("payload=%d", payload), func(b *testing.B) {
			f := benchFrame(payload)
			b.SetBytes(int64(f.EncodedLen()))
			b.ReportAllocs()
			buf := make([]byte, 0, f.EncodedLen())
			for b.Loop() {
				var err error
				if buf, err = proto.AppendFrame(buf[:0], &f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func slicesRepeat(f proto.Frame, n int) []proto.Frame {
	out := make([]proto.Frame, n)
	for i := range out {
		out[i] = f
	}
	return out
}
