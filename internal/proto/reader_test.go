package proto_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// scriptedReader returns one scripted read per Read call, then io.EOF,
// and counts the calls.
type scriptedReader struct {
	reads []read
	calls int
}

type read struct {
	data []byte
	err  error // returned together with data
}

func (r *scriptedReader) Read(p []byte) (int, error) {
	r.calls++
	if len(r.reads) == 0 {
		return 0, io.EOF
	}
	next := r.reads[0]
	if len(next.data) > len(p) {
		panic("scripted read larger than the FrameReader's buffer")
	}
	r.reads = r.reads[1:]
	return copy(p, next.data), next.err
}

// readerStep is one call on a FrameReader and what it must return.
type readerStep struct {
	frame  bool // ReadFrame; otherwise ReadBatch
	frames []proto.Frame
	err    string // the error's text; "" for none
}

func TestFrameReader(t *testing.T) {
	req := func(id uint64) proto.Frame {
		return proto.Frame{Type: proto.TypeRequest, ID: id, BudgetMs: 100, Method: "get", Payload: []byte("account=a")}
	}
	resp := func(id uint64) proto.Frame {
		return proto.Frame{Type: proto.TypeResponse, ID: id, Status: proto.StatusOK, Method: "get", Payload: []byte("balance=1")}
	}
	r1, r2, r3 := req(1), req(2), req(3)
	p1, p2 := resp(1), resp(2)
	drain0 := proto.Frame{Type: proto.TypeDrain, Method: proto.DrainMethod}
	bytesOf := func(frames ...proto.Frame) []byte { return encode(t, frames...) }
	badMagic := bytesOf(r3)
	badMagic[4], badMagic[5] = 0xde, 0xad
	half := bytesOf(r3)[:10]
	boom := errors.New("boom")

	batch := func(err string, frames ...proto.Frame) readerStep {
		return readerStep{frames: frames, err: err}
	}
	frame := func(err string, frames ...proto.Frame) readerStep {
		return readerStep{frame: true, frames: frames, err: err}
	}
	const eof = "EOF"

	tests := []struct {
		name  string
		want  proto.Type
		reads []read
		steps []readerStep
		// calls is how many Reads the steps make; the sticky-error check
		// that follows them must make none.
		calls    int
		buffered int // Buffered() after the steps
	}{
		{
			name:  "batch_returns_frames_one_read_completed",
			want:  proto.TypeRequest,
			reads: []read{{data: append(bytesOf(r1, r2), bytesOf(r3)[:7]...)}, {data: bytesOf(r3)[7:]}},
			steps: []readerStep{batch("", r1, r2), batch("", r3), batch(eof)},
			calls: 3,
		},
		{
			name:  "batch_mid_frame_returns_none",
			want:  proto.TypeRequest,
			reads: []read{{data: bytesOf(r1)[:5]}, {data: bytesOf(r1)[5:]}},
			steps: []readerStep{batch(""), batch("", r1), batch(eof)},
			calls: 3,
		},
		{
			name:  "frame_holds_the_rest",
			want:  proto.TypeRequest,
			reads: []read{{data: bytesOf(r1, r2, r3)}},
			steps: []readerStep{frame("", r1), frame("", r2), frame("", r3), frame(eof)},
			calls: 2,
		},
		{
			name:  "batch_after_frame_returns_held_without_reading",
			want:  proto.TypeRequest,
			reads: []read{{data: bytesOf(r1, r2, r3)}},
			steps: []readerStep{frame("", r1), batch("", r2, r3), batch(eof)},
			calls: 2,
		},
		{
			name:  "frame_reads_until_a_frame_completes",
			want:  proto.TypeResponse,
			reads: []read{{data: bytesOf(p1)[:3]}, {data: bytesOf(p1)[3:20]}, {data: bytesOf(p1)[20:]}},
			steps: []readerStep{frame("", p1), frame(eof)},
			calls: 4,
		},
		{
			name:  "response_frame_from_client",
			want:  proto.TypeRequest,
			reads: []read{{data: bytesOf(p1)}},
			steps: []readerStep{batch("proto: RESPONSE frame from client")},
			calls: 1,
		},
		{
			name:  "drain_frame_from_client",
			want:  proto.TypeRequest,
			reads: []read{{data: bytesOf(drain0)}},
			steps: []readerStep{batch("proto: DRAIN frame from client")},
			calls: 1,
		},
		{
			name:  "drain_frame_from_server_accepted_beside_responses",
			want:  proto.TypeResponse,
			reads: []read{{data: bytesOf(p1, drain0, p2)}},
			steps: []readerStep{batch("", p1, drain0, p2), batch(eof)},
			calls: 2,
		},
		{
			name:  "request_frame_from_server",
			want:  proto.TypeResponse,
			reads: []read{{data: bytesOf(r1)}},
			steps: []readerStep{frame("proto: REQUEST frame from server")},
			calls: 1,
		},
		{
			name:  "frames_before_a_wrong_type_returned_with_the_error",
			want:  proto.TypeResponse,
			reads: []read{{data: bytesOf(p1, p2, r1, resp(3))}},
			steps: []readerStep{batch("proto: REQUEST frame from server", p1, p2)},
			calls: 1,
		},
		{
			name:  "frames_before_a_bad_frame_returned_with_the_error",
			want:  proto.TypeRequest,
			reads: []read{{data: bytes.Join([][]byte{bytesOf(r1, r2), badMagic, bytesOf(r1)}, nil)}},
			steps: []readerStep{batch("proto: bad magic 0xdead", r1, r2)},
			calls: 1,
		},
		{
			name:  "frame_returns_frames_before_a_bad_frame_then_the_error",
			want:  proto.TypeRequest,
			reads: []read{{data: append(bytesOf(r1, r2), badMagic...)}},
			steps: []readerStep{frame("", r1), frame("", r2), frame("proto: bad magic 0xdead")},
			calls: 1,
		},
		{
			name:  "frames_returned_with_the_read_error",
			want:  proto.TypeRequest,
			reads: []read{{data: bytesOf(r1, r2), err: io.EOF}},
			steps: []readerStep{batch(eof, r1, r2)},
			calls: 1,
		},
		{
			name:  "read_error_is_sticky",
			want:  proto.TypeRequest,
			reads: []read{{data: bytesOf(r1)}, {err: boom}},
			steps: []readerStep{batch("", r1), frame("boom")},
			calls: 2,
		},
		{
			name:     "buffered_after_eof_mid_frame",
			want:     proto.TypeRequest,
			reads:    []read{{data: append(bytesOf(r1), half...)}},
			steps:    []readerStep{batch("", r1), batch(eof)},
			calls:    2,
			buffered: len(half),
		},
		{
			name:     "buffered_after_eof_with_the_last_read",
			want:     proto.TypeRequest,
			reads:    []read{{data: append(bytesOf(r1), half...), err: io.EOF}},
			steps:    []readerStep{frame("", r1), frame(eof)},
			calls:    1,
			buffered: len(half),
		},
		{
			name:  "nothing_buffered_after_a_protocol_error",
			want:  proto.TypeRequest,
			reads: []read{{data: append(bytesOf(p1), half...)}},
			steps: []readerStep{batch("proto: RESPONSE frame from client")},
			calls: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sr := &scriptedReader{reads: tt.reads}
			fr := proto.NewFrameReader(sr, tt.want, 4096)
			var first error
			for i, st := range tt.steps {
				var got []proto.Frame
				var err error
				if st.frame {
					var f proto.Frame
					if f, err = fr.ReadFrame(); err == nil {
						got = []proto.Frame{f}
					}
				} else {
					got, err = fr.ReadBatch()
				}
				if diff := cmp.Diff(st.frames, got, bytesEqual, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("step %d: frames (-want +got):\n%s", i+1, diff)
				}
				if errText(err) != st.err {
					t.Fatalf("step %d: error %v, want %q", i+1, err, st.err)
				}
				var pe *proto.ProtocolError
				if isProto := errors.As(err, &pe); isProto != (len(st.err) > 6 && st.err[:6] == "proto:") {
					t.Errorf("step %d: error %v (%T): *ProtocolError is %v, want %v", i+1, err, err, isProto, !isProto)
				}
				if err != nil && first == nil {
					first = err
				}
			}
			if sr.calls != tt.calls {
				t.Errorf("made %d reads, want %d", sr.calls, tt.calls)
			}
			if got := fr.Buffered(); got != tt.buffered {
				t.Errorf("Buffered() = %d, want %d", got, tt.buffered)
			}
			if first == nil {
				t.Fatal("the steps met no error; every row must end in one")
			}
			// Dead: every later call returns the same error and reads
			// nothing more, even with valid bytes left to read.
			sr.reads = []read{{data: bytesOf(r1, p1)}}
			for range 2 {
				if got, err := fr.ReadBatch(); err != first || len(got) != 0 {
					t.Errorf("ReadBatch after the error: %d frames, %v; want none, %v", len(got), err, first)
				}
				if _, err := fr.ReadFrame(); err != first {
					t.Errorf("ReadFrame after the error: %v, want %v", err, first)
				}
			}
			if sr.calls != tt.calls {
				t.Errorf("made %d more reads after the error, want none", sr.calls-tt.calls)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestFrameReaderReadSizes: reads start small and double each time one
// fills the buffer, up to the size asked for (DefaultReadSize for 0), so
// that an idle connection pins little memory and a busy one reads in
// large pieces; a read that does not fill the buffer does not grow it.
func TestFrameReaderReadSizes(t *testing.T) {
	f := proto.Frame{Type: proto.TypeRequest, ID: 1, Method: "get", Payload: bytes.Repeat([]byte("x"), 100)}
	stream := encode(t, slicesRepeat(f, 3000)...)
	for _, tt := range []struct {
		size int
		fill bool // each read fills the buffer
		want []int
	}{
		{0, true, []int{512, 1024, 2048, 4096, 8192, 16384, 32768, 32768}},
		{4096, true, []int{512, 1024, 2048, 4096, 4096}},
		{100, true, []int{100, 100}},
		{0, false, []int{512, 512, 512}},
	} {
		var sizes []int
		rest := stream
		r := readFunc(func(p []byte) (int, error) {
			sizes = append(sizes, len(p))
			n := len(p)
			if !tt.fill {
				n--
			}
			n = copy(p[:n], rest)
			rest = rest[n:]
			return n, nil
		})
		fr := proto.NewFrameReader(r, proto.TypeRequest, tt.size)
		for range tt.want {
			if _, err := fr.ReadBatch(); err != nil {
				t.Fatalf("size %d: ReadBatch: %v", tt.size, err)
			}
		}
		if diff := cmp.Diff(tt.want, sizes); diff != "" {
			t.Errorf("size %d, fill %v: read sizes (-want +got):\n%s", tt.size, tt.fill, diff)
		}
	}
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

// TestReadBatchReusesSlice: the slice ReadBatch returns is reused by the
// next call, but frames copied out of it keep their values and payloads;
// a batch of small frames without keys allocates no slice of its own.
func TestReadBatchReusesSlice(t *testing.T) {
	const batches, per = 400, 20
	var stream [][]byte // one batch per read
	for b := range uint64(batches) {
		var frames []proto.Frame
		for i := range uint64(per) {
			id := b*per + i + 1
			frames = append(frames, proto.Frame{Type: proto.TypeResponse, ID: id, Method: "get", Status: proto.StatusOK, Payload: fmt.Appendf(nil, "answer-%d", id)})
		}
		stream = append(stream, encode(t, frames...))
	}
	// The reader allocates nothing: it hands out the batches encoded
	// above, each whole, in order.
	r := readFunc(func(p []byte) (int, error) {
		if len(stream) == 0 {
			return 0, io.EOF
		}
		n := copy(p, stream[0])
		if stream[0] = stream[0][n:]; len(stream[0]) == 0 {
			stream = stream[1:]
		}
		return n, nil
	})
	fr := proto.NewFrameReader(r, proto.TypeResponse, 64<<10)
	var first []proto.Frame
	for len(first) < per { // until the read buffer holds a whole batch
		frames, err := fr.ReadBatch()
		if err != nil {
			t.Fatal(err)
		}
		first = frames
	}
	kept := slices.Clone(first)
	second, err := fr.ReadBatch()
	if err != nil || len(second) != per {
		t.Fatalf("ReadBatch: %d frames, %v; want %d", len(second), err, per)
	}
	for i, f := range kept {
		if want := fmt.Sprintf("answer-%d", f.ID); string(f.Payload) != want || f.ID != second[i].ID-per {
			t.Fatalf("frame %d kept from one batch, after the next: ID %d payload %q, want %q", i, f.ID, f.Payload, want)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		if frames, err := fr.ReadBatch(); err != nil || len(frames) != per {
			t.Fatalf("ReadBatch: %d frames, %v", len(frames), err)
		}
	})
	// Payloads are carved from 4 KiB blocks: one every few batches.
	t.Logf("%.2f allocations per batch of %d frames", allocs, per)
	if allocs > 0.5 {
		t.Errorf("a batch of %d frames allocates %.2f times, want at most 0.5: the frames slice is not reused", per, allocs)
	}
}
