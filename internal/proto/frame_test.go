package proto_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rpcbench/rpcbench/internal/proto"
)

// sampleFrames covers the three types, every wire status, the smallest frame,
// the longest method and key, and the extremes of ID and budget.
func sampleFrames() []proto.Frame {
	return []proto.Frame{
		{Type: proto.TypeRequest, ID: 1, BudgetMs: 300, Method: "get", Payload: []byte("account=a")},
		{Type: proto.TypeRequest, ID: math.MaxUint64, BudgetMs: math.MaxUint32, Method: strings.Repeat("m", proto.MaxMethodLen),
			Key: strings.Repeat("k", proto.MaxKeyLen), Payload: []byte("account=b amount=5")},
		{Type: proto.TypeResponse, ID: 2, Status: proto.StatusOK, Method: "ctl.ping"},
		{Type: proto.TypeResponse, ID: 3, Status: proto.StatusAppError, Method: "debit", Payload: []byte("insufficient funds")},
		{Type: proto.TypeResponse, ID: 4, Status: proto.StatusInvalidArgument, Method: "x", Key: "k"},
		{Type: proto.TypeResponse, ID: 5, Status: proto.StatusDeadlineExceeded, Method: "y"},
		{Type: proto.TypeResponse, ID: 6, Status: proto.StatusUnavailable, Method: "z", Payload: bytes.Repeat([]byte{0, 0xff}, 700)},
		// A DRAIN naming no request is the one frame with ID 0.
		{Type: proto.TypeDrain, ID: 0, Method: proto.DrainMethod},
		{Type: proto.TypeDrain, ID: 7, Method: proto.DrainMethod},
	}
}

// bytesEqual compares payloads as byte strings rather than element by
// element, which is slow for 64 KiB payloads under the race detector.
// Two empty payloads are left to cmp, so that cmpopts.EquateEmpty, where
// a test adds it, is the one option that applies to them.
var bytesEqual = cmp.FilterValues(func(a, b []byte) bool { return len(a) > 0 || len(b) > 0 }, cmp.Comparer(bytes.Equal))

func encode(t testing.TB, frames ...proto.Frame) []byte {
	t.Helper()
	var b []byte
	for i := range frames {
		var err error
		if b, err = proto.AppendFrame(b, &frames[i]); err != nil {
			t.Fatalf("AppendFrame(%+v): %v", frames[i], err)
		}
	}
	return b
}

// maxFrame returns a request whose frameLen is exactly MaxFrameLen.
func maxFrame() proto.Frame {
	f := proto.Frame{Type: proto.TypeRequest, ID: 9, BudgetMs: 1, Method: "get", Key: "key"}
	f.Payload = bytes.Repeat([]byte("p"), proto.MaxFrameLen+4-f.EncodedLen())
	return f
}

func TestFrameLayout(t *testing.T) {
	f := proto.Frame{Type: proto.TypeResponse, ID: 0x0102030405060708, BudgetMs: 0x0a0b0c0d, Status: proto.StatusAppError,
		Method: "get", Key: "kk", Payload: []byte("pay")}
	want := []byte{
		0, 0, 0, 31, // frameLen: 23 fixed + 3 + 2 + 3
		0x52, 0x43, // magic
		1,                      // version
		2,                      // type response
		1, 2, 3, 4, 5, 6, 7, 8, // requestId
		0x0a, 0x0b, 0x0c, 0x0d, // budgetMs
		1,    // status
		3, 2, // methodLen, keyLen
		'g', 'e', 't', 'k', 'k',
		0, 0, 0, 3, // payloadLen
		'p', 'a', 'y',
	}
	got := encode(t, f)
	if !bytes.Equal(got, want) {
		t.Errorf("AppendFrame encoding:\ngot  % x\nwant % x", got, want)
	}
	if n := f.EncodedLen(); n != len(want) {
		t.Errorf("EncodedLen() = %d, want %d", n, len(want))
	}
}

func TestFrameRoundTrip(t *testing.T) {
	for _, f := range append(sampleFrames(), maxFrame()) {
		t.Run(fmt.Sprintf("%v_%d", f.Type, f.ID), func(t *testing.T) {
			prefix := []byte("prefix")
			b, err := proto.AppendFrame(bytes.Clone(prefix), &f)
			if err != nil {
				t.Fatalf("AppendFrame: %v", err)
			}
			if !bytes.HasPrefix(b, prefix) {
				t.Fatalf("AppendFrame overwrote dst: got % x", b[:len(prefix)])
			}
			b = b[len(prefix):]
			if len(b) != f.EncodedLen() {
				t.Errorf("encoded %d bytes, EncodedLen() = %d", len(b), f.EncodedLen())
			}
			if got, want := int(binary.BigEndian.Uint32(b)), len(b)-4; got != want {
				t.Errorf("frameLen = %d, want %d (bytes after the prefix)", got, want)
			}
			var d proto.Decoder
			got, err := d.Feed(b)
			if err != nil {
				t.Fatalf("Feed: %v", err)
			}
			if diff := cmp.Diff([]proto.Frame{f}, got, bytesEqual); diff != "" {
				t.Errorf("decoded frames (-want +got):\n%s", diff)
			}
			if n := d.Buffered(); n != 0 {
				t.Errorf("Buffered() = %d after a whole frame, want 0", n)
			}
		})
	}
}

// TestAppendFrameHead: the head followed by the payload is the frame
// AppendFrame encodes, and a frame AppendFrame refuses is refused too,
// with dst unchanged.
func TestAppendFrameHead(t *testing.T) {
	for _, f := range append(sampleFrames(), maxFrame()) {
		want, err := proto.AppendFrame(nil, &f)
		if err != nil {
			t.Fatal(err)
		}
		head, err := proto.AppendFrameHead([]byte("prefix"), &f)
		if err != nil {
			t.Fatalf("%v %d: %v", f.Type, f.ID, err)
		}
		if got := append(head[len("prefix"):], f.Payload...); !bytes.Equal(got, want) {
			t.Errorf("%v %d: head+payload is % x, want % x", f.Type, f.ID, got, want)
		}
	}
	big := maxFrame()
	big.Payload = append(big.Payload, 0)
	if got, err := proto.AppendFrameHead([]byte("prefix"), &big); !errors.Is(err, proto.ErrInvalidFrame) || string(got) != "prefix" {
		t.Errorf("a frame over MaxFrameLen: got %q, %v; want dst unchanged and ErrInvalidFrame", got, err)
	}
}

func TestMaxFrameLen(t *testing.T) {
	f := maxFrame()
	b := encode(t, f)
	if got := binary.BigEndian.Uint32(b); got != proto.MaxFrameLen {
		t.Fatalf("frameLen = %d, want %d", got, proto.MaxFrameLen)
	}
	var d proto.Decoder
	frames, err := d.Feed(b)
	if err != nil {
		t.Fatalf("Feed of a %d-byte frame: %v", proto.MaxFrameLen, err)
	}
	if len(frames) != 1 || len(frames[0].Payload) != len(f.Payload) {
		t.Errorf("got %d frames, want 1 with a %d-byte payload", len(frames), len(f.Payload))
	}

	// One more payload byte makes frameLen 65537, which no encoder may emit.
	f.Payload = append(f.Payload, 'p')
	dst := []byte("dst")
	out, err := proto.AppendFrame(dst, &f)
	if !errors.Is(err, proto.ErrInvalidFrame) {
		t.Fatalf("AppendFrame with frameLen %d: got error %v, want %v", proto.MaxFrameLen+1, err, proto.ErrInvalidFrame)
	}
	if !bytes.Equal(out, dst) {
		t.Errorf("AppendFrame changed dst on error: got %q, want %q", out, dst)
	}
}

func TestAppendFrameErrors(t *testing.T) {
	ok := proto.Frame{Type: proto.TypeRequest, ID: 1, BudgetMs: 10, Method: "get", Payload: []byte("account=a")}
	tests := []struct {
		name   string
		mutate func(*proto.Frame)
	}{
		{"frame_len_65537", func(f *proto.Frame) {
			f.Payload = make([]byte, proto.MaxFrameLen+1-23-len(f.Method)-len(f.Key))
		}},
		{"method_len_0", func(f *proto.Frame) { f.Method = "" }},
		{"method_len_33", func(f *proto.Frame) { f.Method = strings.Repeat("m", 33) }},
		{"key_len_65", func(f *proto.Frame) { f.Key = strings.Repeat("k", 65) }},
		{"id_0", func(f *proto.Frame) { f.ID = 0 }},
		{"type_0", func(f *proto.Frame) { f.Type = 0 }},
		{"type_4", func(f *proto.Frame) { f.Type = 4 }},
		{"drain_with_status", func(f *proto.Frame) { f.Type, f.Status = proto.TypeDrain, proto.StatusAppError }},
		{"status_unknown", func(f *proto.Frame) { f.Type, f.Status = proto.TypeResponse, proto.StatusUnknown }},
		{"status_client_busy", func(f *proto.Frame) { f.Type, f.Status = proto.TypeResponse, proto.StatusClientBusy }},
		{"status_rate_limited", func(f *proto.Frame) { f.Type, f.Status = proto.TypeResponse, proto.StatusRateLimited }},
		{"status_circuit_open", func(f *proto.Frame) { f.Type, f.Status = proto.TypeResponse, proto.StatusCircuitOpen }},
		{"status_5", func(f *proto.Frame) { f.Type, f.Status = proto.TypeResponse, 5 }},
		{"request_with_status", func(f *proto.Frame) { f.Status = proto.StatusAppError }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := ok
			tt.mutate(&f)
			dst := []byte("dst")
			out, err := proto.AppendFrame(dst, &f)
			if !errors.Is(err, proto.ErrInvalidFrame) {
				t.Fatalf("got error %v, want one wrapping %v", err, proto.ErrInvalidFrame)
			}
			if !bytes.Equal(out, dst) {
				t.Errorf("dst changed on error: got %q, want %q", out, dst)
			}
		})
	}
	if _, err := proto.AppendFrame(nil, &ok); err != nil {
		t.Errorf("the unmutated frame: got error %v, want nil", err)
	}
}

// feedInPieces feeds b to a fresh Decoder in pieces whose sizes next
// chooses, and returns every frame and the first error.
func feedInPieces(b []byte, next func(rest int) int) ([]proto.Frame, int, error) {
	var d proto.Decoder
	var all []proto.Frame
	for len(b) > 0 {
		n := next(len(b))
		frames, err := d.Feed(b[:n])
		all = append(all, frames...)
		if err != nil {
			return all, d.Buffered(), err
		}
		b = b[n:]
	}
	return all, d.Buffered(), nil
}

func TestDecoderSplits(t *testing.T) {
	want := append(sampleFrames(), maxFrame())
	want = append(want, sampleFrames()...)
	stream := encode(t, want...)
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		next func(rest int) int
	}{
		{"whole", func(rest int) int { return rest }},
		{"one_byte", func(int) int { return 1 }},
		{"random_1_13", func(rest int) int { return min(rest, 1+rng.IntN(13)) }},
		{"random_1_70000", func(rest int) int { return min(rest, 1+rng.IntN(70000)) }},
		{"frame_minus_one", func(rest int) int { return min(rest, 23) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, buffered, err := feedInPieces(stream, tt.next)
			if err != nil {
				t.Fatalf("Feed: %v", err)
			}
			if diff := cmp.Diff(want, got, bytesEqual); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
			if buffered != 0 {
				t.Errorf("Buffered() = %d at a frame boundary, want 0", buffered)
			}
		})
	}
}

func TestDecoderBuffered(t *testing.T) {
	b := encode(t, sampleFrames()[0])
	var d proto.Decoder
	for i := range len(b) - 1 {
		frames, err := d.Feed(b[i : i+1])
		if err != nil || len(frames) != 0 {
			t.Fatalf("byte %d: got %d frames, error %v; want 0 frames, nil", i, len(frames), err)
		}
		if got := d.Buffered(); got != i+1 {
			t.Fatalf("Buffered() after %d bytes = %d, want %d", i+1, got, i+1)
		}
	}
}

// TestDecoderFramesOwnMemory checks the Feed contract: frames do not alias
// the bytes they were decoded from, which the caller reuses for its next
// read.
func TestDecoderFramesOwnMemory(t *testing.T) {
	want := sampleFrames()
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split=%v", split), func(t *testing.T) {
			b := encode(t, want...)
			var d proto.Decoder
			var got []proto.Frame
			if split {
				for i := range b {
					frames, err := d.Feed(b[i : i+1])
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, frames...)
				}
			} else {
				var err error
				if got, err = d.Feed(b); err != nil {
					t.Fatal(err)
				}
			}
			for i := range b {
				b[i] = 0xaa
			}
			d.Feed(encode(t, maxFrame())) // would overwrite any buffer the frames alias
			if diff := cmp.Diff(want, got, bytesEqual); diff != "" {
				t.Errorf("frames changed after their input was overwritten (-want +got):\n%s", diff)
			}
		})
	}
}

// validRequest is the encoding the decoder error cases mutate: 35 bytes,
// frameLen 31, method "get" at 23-25, key "k" at 26, payloadLen at 27-30,
// payload "abcd" at 31-34.
func validRequest(t *testing.T) []byte {
	return encode(t, proto.Frame{Type: proto.TypeRequest, ID: 77, BudgetMs: 5, Method: "get", Key: "k", Payload: []byte("abcd")})
}

func TestDecoderErrors(t *testing.T) {
	prefix := func(n uint32) func([]byte) []byte {
		return func([]byte) []byte { return binary.BigEndian.AppendUint32(nil, n) }
	}
	set := func(i int, v ...byte) func([]byte) []byte {
		return func(b []byte) []byte { copy(b[i:], v); return b }
	}
	tests := []struct {
		name   string
		input  func(valid []byte) []byte
		reason string
	}{
		{"len_65537", prefix(65537), "frame length 65537 outside [24,65536]"},
		{"len_23", prefix(23), "frame length 23 outside [24,65536]"},
		{"len_0", prefix(0), "frame length 0 outside [24,65536]"},
		{"len_2^31-1", prefix(math.MaxInt32), "frame length 2147483647 outside [24,65536]"},
		{"len_2^32-1", prefix(math.MaxUint32), "frame length 4294967295 outside [24,65536]"},
		{"bad_magic", set(4, 0xde, 0xad), "bad magic 0xdead"},
		{"version_2", set(6, 2), "unsupported version 2"},
		{"type_0", set(7, 0), "bad frame type 0"},
		{"type_4", set(7, 4), "bad frame type 4"},
		{"drain_with_status", func(b []byte) []byte { b[7], b[20] = 3, 1; return b }, "drain with status 1"},
		{"id_0", set(8, 0, 0, 0, 0, 0, 0, 0, 0), "request id 0"},
		{"status_5", set(20, 5), "bad status 5"},
		{"status_unknown", set(20, 0xff), "bad status 255"},
		{"status_client_busy", set(20, 0xfc), "bad status 252"},
		{"status_rate_limited", set(20, 0xfd), "bad status 253"},
		{"status_circuit_open", set(20, 0xfe), "bad status 254"},
		{"request_with_status", set(20, 1), "request with status 1"},
		{"method_len_0", set(21, 0), "method length 0 outside [1,32]"},
		{"method_len_33", set(21, 33), "method length 33 outside [1,32]"},
		{"key_len_65", set(22, 65), "key length 65 outside [0,64]"},
		{"method_and_key_overrun", set(21, 30), "method and key (31 bytes) overrun frame length 31"},
		{"payload_len_short", set(27, 0, 0, 0, 3), "frame length 31 does not match its parts (payload 3)"},
		{"payload_len_long", set(27, 0, 0, 0, 5), "frame length 31 does not match its parts (payload 5)"},
		{"key_len_eats_payload_len", set(22, 4), "frame length 31 does not match its parts (payload 73491043)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			good := encode(t, sampleFrames()[0])
			bad := tt.input(validRequest(t))
			var d proto.Decoder
			frames, err := d.Feed(append(bytes.Clone(good), bad...))
			var pe *proto.ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("Feed: got error %v, want a *ProtocolError", err)
			}
			if pe.Reason != tt.reason {
				t.Errorf("Reason = %q, want %q", pe.Reason, tt.reason)
			}
			if got, want := err.Error(), "proto: "+tt.reason; got != want {
				t.Errorf("Error() = %q, want %q", got, want)
			}
			if diff := cmp.Diff(sampleFrames()[:1], frames, bytesEqual); diff != "" {
				t.Errorf("frames before the bad one (-want +got):\n%s", diff)
			}
			if d.Err() != err {
				t.Errorf("Err() = %v, want %v", d.Err(), err)
			}
			if n := d.Buffered(); n != 0 {
				t.Errorf("Buffered() = %d after an error, want 0", n)
			}
			// Dead: a valid frame afterwards is not interpreted.
			frames, err2 := d.Feed(good)
			if err2 != err || len(frames) != 0 {
				t.Errorf("Feed after the error: got %d frames, error %v; want 0 frames, %v", len(frames), err2, err)
			}
		})
	}
}

// TestDecoderLengthCheckedEarly feeds only a length prefix, one byte at a
// time: the fourth byte must already be rejected, with no body to come.
func TestDecoderLengthCheckedEarly(t *testing.T) {
	for _, n := range []uint32{proto.MaxFrameLen + 1, math.MaxInt32, proto.MinFrameLen - 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			b := binary.BigEndian.AppendUint32(nil, n)
			var d proto.Decoder
			for i := range 3 {
				if _, err := d.Feed(b[i : i+1]); err != nil {
					t.Fatalf("Feed of prefix byte %d: %v, want nil", i, err)
				}
			}
			_, err := d.Feed(b[3:])
			var pe *proto.ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("Feed of the 4th prefix byte: got %v, want a *ProtocolError", err)
			}
			if want := fmt.Sprintf("frame length %d outside [24,65536]", n); pe.Reason != want {
				t.Errorf("Reason = %q, want %q", pe.Reason, want)
			}
		})
	}
}

// TestDecoderHugeLengthNoAlloc: a declared length of 2^31-1 must be
// rejected before anything is sized from it.
func TestDecoderHugeLengthNoAlloc(t *testing.T) {
	b := binary.BigEndian.AppendUint32(nil, math.MaxInt32)
	var d proto.Decoder
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := d.Feed(b)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("Feed accepted frameLen 2^31-1")
	}
	const limit = 1 << 20
	if got := after.TotalAlloc - before.TotalAlloc; got > limit {
		t.Errorf("Feed allocated %d bytes rejecting frameLen 2^31-1, want at most %d", got, limit)
	}
}

func TestStringers(t *testing.T) {
	tests := []struct {
		v    fmt.Stringer
		want string
	}{
		{proto.StatusOK, "OK"},
		{proto.StatusAppError, "APP_ERROR"},
		{proto.StatusInvalidArgument, "INVALID_ARGUMENT"},
		{proto.StatusDeadlineExceeded, "DEADLINE_EXCEEDED"},
		{proto.StatusUnavailable, "UNAVAILABLE"},
		{proto.StatusUnknown, "UNKNOWN"},
		{proto.StatusClientBusy, "CLIENT_BUSY"},
		{proto.StatusRateLimited, "RATE_LIMITED"},
		{proto.StatusCircuitOpen, "CIRCUIT_OPEN"},
		{proto.Status(7), "UNKNOWN_STATUS_7"},
		{proto.TypeRequest, "REQUEST"},
		{proto.TypeResponse, "RESPONSE"},
		{proto.TypeDrain, "DRAIN"},
		{proto.Type(0), "UNKNOWN_TYPE_0"},
		{proto.Type(9), "UNKNOWN_TYPE_9"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.v.String(); got != tt.want {
				t.Errorf("%T(%d).String() = %q, want %q", tt.v, tt.v, got, tt.want)
			}
		})
	}
}
