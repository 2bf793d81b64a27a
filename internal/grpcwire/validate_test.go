package grpcwire

import (
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// grpcHeaders is the header block of a gRPC request for path, as send
// writes it.
func grpcHeaders(path string) md {
	return md{{":method", "POST"}, {":scheme", "http"}, {":path", path}, {":authority", "test"},
		{"content-type", "application/grpc"}, {"te", "trailers"}}
}

// without returns fields without the one named name.
func (m md) without(name string) md {
	var out md
	for _, f := range m {
		if f[0] != name {
			out = append(out, f)
		}
	}
	return out
}

// with returns fields with name set to value, in place if present.
func (m md) with(name, value string) md {
	out := append(md(nil), m...)
	for i := range out {
		if out[i][0] == name {
			out[i][1] = value
			return out
		}
	}
	return append(out, [2]string{name, value})
}

// headers writes one header block on stream id, as given.
func (c *h2client) headers(id uint32, fields md, end bool, prio *http2.PriorityParam) {
	c.t.Helper()
	c.hbuf.Reset()
	for _, f := range fields {
		c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	p := http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hbuf.Bytes(), EndHeaders: true, EndStream: end}
	if prio != nil {
		p.Priority = *prio
	}
	if err := c.fr.WriteHeaders(p); err != nil {
		c.t.Fatal(err)
	}
}

// data writes one DATA frame.
func (c *h2client) data(id uint32, end bool, b []byte) {
	c.t.Helper()
	if err := c.fr.WriteData(id, end, b); err != nil {
		c.t.Fatal(err)
	}
}

// frames is what the server sent on a connection, by stream.
type frames struct {
	rst     map[uint32][]http2.ErrCode
	status  map[uint32]string // the first header block's :status
	grpc    map[uint32]string // grpc-status, wherever it came
	body    map[uint32]string
	goaway  *http2.GoAwayFrame
	connErr error
}

// sync sends a Get on a new stream and collects every frame the server
// sends until that Get's answer ends: frames the server sends for
// streams before it come first (stream frames go out in order).
func (c *h2client) sync() frames {
	c.t.Helper()
	id := c.send(pathGet, getMsg("a"), nil)
	got := frames{rst: map[uint32][]http2.ErrCode{}, status: map[uint32]string{}, grpc: map[uint32]string{}, body: map[uint32]string{}}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				got.connErr = c.err
				c.t.Fatalf("the connection ended before the Get on stream %d was answered: %v (GOAWAY %v)", id, c.err, got.goaway)
			}
			switch f := f.(type) {
			case *http2.MetaHeadersFrame:
				if _, ok := got.status[f.StreamID]; !ok {
					got.status[f.StreamID] = f.PseudoValue("status")
				}
				r := result{headers: f.Fields}
				if s := r.status(); s != "" {
					got.grpc[f.StreamID] = s
				}
				if f.StreamID == id && f.StreamEnded() {
					return got
				}
			case *dataCopy:
				got.body[f.StreamID] += string(f.data)
			case *http2.RSTStreamFrame:
				got.rst[f.StreamID] = append(got.rst[f.StreamID], f.ErrCode)
				if f.StreamID == id {
					c.t.Fatalf("the Get on stream %d was reset: %v", id, f.ErrCode)
				}
			case *http2.GoAwayFrame:
				got.goaway = f
			}
		case <-deadline:
			c.t.Fatalf("the Get on stream %d was not answered within 5s", id)
		}
	}
}

var (
	codeProtocol = []http2.ErrCode{http2.ErrCodeProtocol}
	codeClosed   = []http2.ErrCode{http2.ErrCodeStreamClosed}
)

// TestMalformedRequest: a header block RFC 9113 §8.2-8.3 calls
// malformed, a content-length the DATA does not add up to, or a stream
// depending on itself is a stream error: RST_STREAM(PROTOCOL_ERROR), the
// request not logged (no ATTEMPT) nor executed, and the connection goes
// on serving. Before validate.go, all but the response pseudo-header and
// END_STREAM-less content-length cases were answered (405, trailers-only)
// or executed.
func TestMalformedRequest(t *testing.T) {
	msg := frameMessage(debitMsg("a", 10))
	req := grpcHeaders(pathDebit)
	length := strconv.Itoa(len(msg))
	for _, tc := range []struct {
		name   string
		fields md
		prio   *http2.PriorityParam
		body   [][]byte // DATA frames; the last ends the stream
		// attempt: the HEADERS passed, so the request was logged; its
		// DATA then broke the content-length.
		attempt bool
	}{
		{name: "no :method", fields: req.without(":method")},
		{name: "no :scheme", fields: req.without(":scheme")},
		{name: "no :path", fields: req.without(":path")},
		{name: "empty :path", fields: req.with(":path", "")},
		{name: "empty :method", fields: req.with(":method", "")},
		{name: ":status in a request", fields: append(md{{":status", "200"}}, req.without(":method")...)},
		{name: "connection", fields: req.with("connection", "keep-alive")},
		{name: "transfer-encoding", fields: req.with("transfer-encoding", "chunked")},
		{name: "upgrade", fields: req.with("upgrade", "h2c")},
		{name: "te gzip", fields: req.with("te", "gzip")},
		{name: "content-length over the DATA", fields: req.with("content-length", strconv.Itoa(len(msg)+1)), attempt: true},
		{name: "content-length under the DATA", fields: req.with("content-length", "1"), attempt: true},
		{name: "content-length under two DATA frames", fields: req.with("content-length", length), body: [][]byte{msg, {0}}, attempt: true},
		{name: "content-length not a number", fields: req.with("content-length", "+"+length)},
		{name: "content-length twice, differing", fields: append(req.with("content-length", length), [2]string{"content-length", "1"})},
		{name: "content-length and END_STREAM on HEADERS", fields: req.with("content-length", length), body: [][]byte{}},
		{name: "depends on itself", fields: req, prio: &http2.PriorityParam{StreamDep: 1, Weight: 15}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t)
			c := dial(t, ts.addr)
			body := tc.body
			if body == nil {
				body = [][]byte{msg}
			}
			c.headers(1, tc.fields, len(body) == 0, tc.prio)
			for i, b := range body {
				c.data(1, i == len(body)-1, b)
			}
			c.nextID = 3
			got := c.sync()
			if want := codeProtocol; !equalCodes(got.rst[1], want) {
				t.Errorf("stream 1: got RST_STREAM %v, want %v (and status %q)", got.rst[1], want, got.status[1])
			}
			want := 1 // the Get after it
			if tc.attempt {
				want++
			}
			if n := len(ts.events(t, "ATTEMPT")); n != want {
				t.Errorf("%d ATTEMPT events, want %d", n, want)
			}
			if n := debits(t, ts); n != 0 {
				t.Errorf("%d debits executed, want 0", n)
			}
		})
	}
}

// TestWellFormedRequest: what validation must let through. A
// content-length that matches the DATA, an empty :authority and a
// priority on another stream are served.
func TestWellFormedRequest(t *testing.T) {
	msg := frameMessage(debitMsg("a", 10))
	req := grpcHeaders(pathDebit)
	ts := startServer(t)
	c := dial(t, ts.addr)
	for _, tc := range []struct {
		name   string
		fields md
		prio   *http2.PriorityParam
	}{
		{name: "content-length matching two DATA frames", fields: req.with("content-length", strconv.Itoa(len(msg)))},
		{name: "empty :authority", fields: req.with(":authority", "")},
		{name: "priority on another stream", fields: req, prio: &http2.PriorityParam{StreamDep: 1, Weight: 200}},
	} {
		id := c.nextID
		c.nextID += 2
		c.headers(id, tc.fields, false, tc.prio)
		c.data(id, false, msg[:3])
		c.data(id, true, msg[3:])
		if r := c.wait(id, false, 2*time.Second); r.status() != "0" || r.rst != nil {
			t.Errorf("%s: got grpc-status %q RST %v, want 0 and no RST", tc.name, r.status(), r.rst)
		}
	}
}

// debits counts the debits the server executed.
func debits(t *testing.T, ts *testServer) int {
	t.Helper()
	n := 0
	for _, e := range ts.events(t, "EXEC") {
		if e.Text("method") == "debit" {
			n++
		}
	}
	return n
}

// TestRequestTrailers: a request may end with trailers (a second header
// block with END_STREAM, no pseudo-header, RFC 9113 §8.1), after its
// DATA: the gRPC request is served, a 415 one answered, and one the
// server answered early (unknown method) stays answered, the connection
// kept. Before, the first was reset (PROTOCOL_ERROR) and the others
// closed the connection (GOAWAY(STREAM_CLOSED)). Trailers without END_STREAM, or with a
// pseudo-header, are malformed.
func TestRequestTrailers(t *testing.T) {
	msg := frameMessage(debitMsg("a", 10))
	trailers := md{{"x-checksum", "1"}}
	for _, tc := range []struct {
		name     string
		fields   md
		trailers md
		end      bool
		status   string // the first header block's :status
		grpc     string
		rst      []http2.ErrCode
		execs    int
	}{
		{name: "gRPC request", fields: grpcHeaders(pathDebit), trailers: trailers, end: true, status: "200", grpc: "0", execs: 1},
		{name: "415 request", fields: grpcHeaders(pathDebit).with("content-type", "text/plain"), trailers: trailers, end: true, status: "415"},
		{name: "answered first (unknown method)", fields: grpcHeaders("/nope/Nope"), trailers: trailers, end: true, status: "200", grpc: "12"},
		{name: "no END_STREAM", fields: grpcHeaders(pathDebit), trailers: trailers, rst: codeProtocol},
		{name: "pseudo-header", fields: grpcHeaders(pathDebit), trailers: md{{":path", "/"}}, end: true, rst: codeProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t)
			c := dial(t, ts.addr)
			c.headers(1, tc.fields, false, nil)
			c.data(1, false, msg)
			c.headers(1, tc.trailers, tc.end, nil)
			r := c.wait(1, false, 2*time.Second)
			c.nextID = 3
			if got := c.sync(); got.goaway != nil || r.goaway != nil {
				t.Fatalf("got GOAWAY, want the connection kept")
			}
			var rst []http2.ErrCode
			if r.rst != nil {
				rst = append(rst, *r.rst)
			}
			status := ""
			for _, f := range r.headers {
				if f.Name == ":status" {
					status = f.Value
				}
			}
			if status != tc.status || r.status() != tc.grpc || !equalCodes(rst, tc.rst) {
				t.Errorf("stream 1: got :status %q grpc-status %q RST %v, want %q %q %v", status, r.status(), rst, tc.status, tc.grpc, tc.rst)
			}
			if n := debits(t, ts); n != tc.execs {
				t.Errorf("%d debits executed, want %d", n, tc.execs)
			}
		})
	}
}

// TestFramesOnEndedStreams: RFC 9113 §5.1. DATA or HEADERS on a stream
// whose client half has ended (END_STREAM or RST_STREAM sent) is a
// stream error STREAM_CLOSED; before, DATA on one was ignored, HEADERS
// on an executing one reset PROTOCOL_ERROR. DATA on a stream the server
// answered early or reset, its client half still open, was sent before
// the client knew, and is ignored: no second RST_STREAM.
func TestFramesOnEndedStreams(t *testing.T) {
	msg := frameMessage(debitMsg("a", 10))
	req := grpcHeaders(pathDebit)
	for _, tc := range []struct {
		name   string
		faults []string
		script func(c *recorder)
		rst    []http2.ErrCode
	}{
		{name: "DATA after an answer", script: func(r *recorder) {
			r.c.headers(1, req, false, nil)
			r.c.data(1, true, msg)
			r.sync()
			r.c.data(1, true, msg)
		}, rst: codeClosed},
		{name: "DATA after the client's RST_STREAM", script: func(r *recorder) {
			r.c.headers(1, req, false, nil)
			r.c.fr.WriteRSTStream(1, http2.ErrCodeCancel)
			r.c.data(1, true, msg)
		}, rst: codeClosed},
		{name: "HEADERS on an executing stream", faults: []string{"kind=noreply method=debit count=1"}, script: func(r *recorder) {
			r.c.headers(1, req, false, nil)
			r.c.data(1, true, msg)
			r.c.headers(1, md{{"x-late", "1"}}, true, nil)
		}, rst: codeClosed},
		{name: "DATA after an early answer", script: func(r *recorder) {
			r.c.headers(1, req.with(":path", "/nope/Nope"), false, nil)
			r.sync()
			r.c.data(1, true, msg)
		}},
		{name: "DATA after the server's RST_STREAM", script: func(r *recorder) {
			r.c.headers(1, req.with("te", "gzip"), false, nil)
			r.sync()
			r.c.data(1, false, msg)
			r.c.headers(1, md{{"x-late", "1"}}, true, nil)
		}, rst: codeProtocol},
		{name: "DATA after the Framer's RST_STREAM", script: func(r *recorder) {
			// The Framer refuses an uppercase name before the stream is
			// seen opening: its DATA was a connection error (DATA on an
			// idle stream).
			r.c.headers(1, req.with("X-Upper", "1"), false, nil)
			r.c.data(1, true, msg)
		}, rst: codeProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, tc.faults...)
			r := &recorder{c: dial(t, ts.addr)}
			r.c.nextID = 3
			tc.script(r)
			r.sync()
			if !equalCodes(r.rsts, tc.rst) {
				t.Errorf("stream 1: got RST_STREAM %v, want %v", r.rsts, tc.rst)
			}
		})
	}
}

// recorder keeps the RST_STREAMs of stream 1 over a connection's syncs.
type recorder struct {
	c    *h2client
	rsts []http2.ErrCode
}

func (r *recorder) sync() {
	r.c.t.Helper()
	r.rsts = append(r.rsts, r.c.sync().rst[1]...)
}

// TestNotGRPCAnswered: a GET is answered 405 with allow: POST, and a
// POST of another content-type 415, each with a text body (what h2spec's
// generic tests need to see a response's DATA), the connection kept;
// each once the client has ended its request, not before.
func TestNotGRPCAnswered(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	c.headers(1, grpcHeaders(pathGet).with(":method", "GET"), true, nil)
	c.headers(3, grpcHeaders(pathGet).with("content-type", "application/json"), false, nil)
	c.nextID = 5
	got := c.sync()
	if s, ok := got.status[3]; ok {
		t.Errorf("stream 3: got :status %q before the request ended", s)
	}
	c.data(3, true, []byte("{}"))
	later := c.sync()
	got.status[3], got.body[3] = later.status[3], later.body[3]
	for _, want := range []struct {
		id     uint32
		status string
	}{{1, "405"}, {3, "415"}} {
		if got.status[want.id] != want.status || got.body[want.id] == "" {
			t.Errorf("stream %d: got :status %q body %q, want %s and a text body", want.id, got.status[want.id], got.body[want.id], want.status)
		}
	}
}

// TestPrioritySelfDependency: a PRIORITY frame making a stream depend on
// itself is a stream error PROTOCOL_ERROR (RFC 9113 §5.3.1); any other
// PRIORITY is ignored.
func TestPrioritySelfDependency(t *testing.T) {
	ts := startServer(t)
	c := dial(t, ts.addr)
	if err := c.fr.WritePriority(1, http2.PriorityParam{StreamDep: 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.fr.WritePriority(3, http2.PriorityParam{StreamDep: 1}); err != nil {
		t.Fatal(err)
	}
	c.nextID = 5
	got := c.sync()
	if !equalCodes(got.rst[1], codeProtocol) || len(got.rst[3]) != 0 {
		t.Errorf("got RST_STREAM %v on 1 and %v on 3, want %v and none", got.rst[1], got.rst[3], codeProtocol)
	}
}

func equalCodes(a, b []http2.ErrCode) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
