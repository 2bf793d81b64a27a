package workload

import (
	"bytes"
	"fmt"
	"strconv"
)

// EchoSize is the payload of the payload-size rows: every request and
// every answer carries 16 KiB.
const EchoSize = 16 << 10

// EchoRequests returns Accounts distinct payloads of size bytes each
// (size at least 16), for rpcbench's echo method and the raw echo: payload
// i starts with "echo-i " and goes on with bytes that depend on i and
// their position, so that an answer carrying another call's payload, or
// a shifted or truncated one, is not equal to the request.
func EchoRequests(size int) [][]byte {
	out := make([][]byte, Accounts)
	for i := range out {
		b := make([]byte, 0, size)
		b = append(b, "echo-"...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ' ')
		for j := len(b); j < size; j++ {
			b = append(b, 'a'+byte((i*7+j)%26))
		}
		out[i] = b[:size]
	}
	return out
}

// CheckEcho reports whether resp equals req, as every echo answer must.
// It does not allocate unless the answer is wrong.
func CheckEcho(req, resp []byte) error {
	if bytes.Equal(req, resp) {
		return nil
	}
	return fmt.Errorf("%w: echo of %d bytes starting %.16q answered with %d bytes starting %.16q",
		ErrWrongAnswer, len(req), req, len(resp), resp)
}
