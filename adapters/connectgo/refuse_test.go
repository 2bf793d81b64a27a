package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rpcbench/rpcbench/adapters/gokit/bankpb"
	"github.com/rpcbench/rpcbench/adapters/gokit/clientkit/clientkittest"
)

// HTTP/2 frame types, flags and error codes the refusing server uses
// (RFC 9113 §6, §7).
const (
	frameData      = 0x0
	frameHeaders   = 0x1
	frameRSTStream = 0x3
	frameSettings  = 0x4

	flagEndStream  = 0x1
	flagAck        = 0x1
	flagEndHeaders = 0x4

	codeRefusedStream = 0x7
)

// refuser is an HTTP/2 cleartext server, written frame by frame, that
// answers the first request of its one connection RST_STREAM
// (REFUSED_STREAM), unprocessed, and every later one with a Bank reply:
// what only a transparent retry turns into OK.
type refuser struct {
	ln net.Listener

	mu      sync.Mutex // guards streams
	streams []uint32   // every request's stream, in arrival order
}

func startRefuser(t *testing.T) *refuser {
	ln := clientkittest.Listen(t)
	r := &refuser{ln: ln}
	done := make(chan struct{})
	var conn net.Conn
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		conn = c
		r.mu.Unlock()
		if err := r.serve(c); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			t.Logf("refuser: %v", err)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		r.mu.Lock()
		if conn != nil {
			conn.Close()
		}
		r.mu.Unlock()
		<-done
	})
	return r
}

func (r *refuser) seen() []uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]uint32(nil), r.streams...)
}

func writeFrame(w io.Writer, typ, flags byte, stream uint32, payload []byte) error {
	h := make([]byte, 9, 9+len(payload))
	h[0], h[1], h[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	h[3], h[4] = typ, flags
	binary.BigEndian.PutUint32(h[5:], stream)
	_, err := w.Write(append(h, payload...))
	return err
}

// literal is one HPACK literal header field without indexing, new name,
// no Huffman coding (RFC 7541 §6.2.2); both strings under 127 bytes.
func literal(name, value string) []byte {
	b := []byte{0x00, byte(len(name))}
	b = append(b, name...)
	b = append(b, byte(len(value)))
	return append(b, value...)
}

func (r *refuser) serve(c net.Conn) error {
	br := bufio.NewReader(c)
	preface := make([]byte, 24)
	if _, err := io.ReadFull(br, preface); err != nil {
		return err
	}
	if err := writeFrame(c, frameSettings, 0, 0, nil); err != nil {
		return err
	}
	h := make([]byte, 9)
	for {
		if _, err := io.ReadFull(br, h); err != nil {
			return err
		}
		n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		typ, flags, stream := h[3], h[4], binary.BigEndian.Uint32(h[5:])&0x7fffffff
		if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
			return err
		}
		switch {
		case typ == frameSettings && flags&flagAck == 0:
			if err := writeFrame(c, frameSettings, flagAck, 0, nil); err != nil {
				return err
			}
		case typ == frameHeaders:
			r.mu.Lock()
			r.streams = append(r.streams, stream)
			r.mu.Unlock()
		case typ == frameData && flags&flagEndStream != 0:
			if err := r.answer(c, stream); err != nil {
				return err
			}
		}
	}
}

// answer refuses the connection's first stream and answers the others.
func (r *refuser) answer(c net.Conn, stream uint32) error {
	r.mu.Lock()
	first := len(r.streams) > 0 && r.streams[0] == stream
	r.mu.Unlock()
	if first {
		return writeFrame(c, frameRSTStream, 0, stream, binary.BigEndian.AppendUint32(nil, codeRefusedStream))
	}
	msg, err := proto.Marshal(&bankpb.AccountReply{Account: "acct-A", Balance: 990, Exec: 1})
	if err != nil {
		return err
	}
	body := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg)))
	headers := append([]byte{0x88}, literal("content-type", "application/grpc")...) // 0x88: :status 200
	if err := writeFrame(c, frameHeaders, flagEndHeaders, stream, headers); err != nil {
		return err
	}
	if err := writeFrame(c, frameData, 0, stream, append(body, msg...)); err != nil {
		return err
	}
	return writeFrame(c, frameHeaders, flagEndHeaders|flagEndStream, stream, literal("grpc-status", "0"))
}

// TestTransparentRetry: what init_ok's transparent_retry claims. A debit
// refused with REFUSED_STREAM, which the server never processed, is sent
// again by net/http's HTTP/2 transport on its own, on a new stream, and
// the adapter reports one OK result.
func TestTransparentRetry(t *testing.T) {
	r := startRefuser(t)
	h := clientkittest.Start(t, clientStack)
	if caps := h.Init()["capabilities"].(map[string]any); caps["transparent_retry"] != true {
		t.Errorf("capabilities %v, want transparent_retry", caps)
	}
	h.Send(clientkittest.DebitLine(1, "c", r.ln.Addr().String(), nil, "refused"))
	res := h.Recv()
	resp, _ := res["response"].(map[string]any)
	if res["code"] != "OK" || resp["balance"] != "990" {
		t.Errorf("got %v, want OK with balance 990", res)
	}
	if got := fmt.Sprint(r.seen()); got != "[1 3]" {
		t.Errorf("the server saw streams %s, want [1 3]: the refused one and its transparent retry", got)
	}
}
