package grpcwire

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The checks here make a header block malformed (RFC 9113 §8.1.1): a
// stream error, RST_STREAM(PROTOCOL_ERROR), before the request is
// logged or answered, however its method, path or content-type would
// have been answered. The Framer has already refused what it checks
// itself (same answer): uppercase or invalid field names, invalid
// values, a pseudo-header after a regular field, twice, or unknown,
// request and response pseudo-headers mixed.

// errMalformed is wrapped by every error the checks return.
var errMalformed = errors.New("grpcwire: malformed header block")

// noLength is a request's content-length when it sent none.
const noLength = -1

// checkRequest checks a request's header block (RFC 9113 §8.2.2,
// §8.3.1) and returns its content-length, or noLength.
func checkRequest(f *http2.MetaHeadersFrame) (int64, error) {
	if err := checkPriority(f); err != nil {
		return 0, err
	}
	method := f.PseudoValue("method")
	for _, hf := range f.PseudoFields() {
		switch {
		case hf.Name == ":status", hf.Name == ":protocol":
			// :protocol needs SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC
			// 8441), which the server does not send.
			return 0, fmt.Errorf("%w: %s in a request", errMalformed, hf.Name)
		case hf.Value == "" && hf.Name != ":authority":
			return 0, fmt.Errorf("%w: empty %s", errMalformed, hf.Name)
		}
	}
	if method == "" {
		return 0, fmt.Errorf("%w: no :method", errMalformed)
	}
	if method == "CONNECT" {
		// RFC 9113 §8.5: :authority only.
		if f.PseudoValue("scheme") != "" || f.PseudoValue("path") != "" || f.PseudoValue("authority") == "" {
			return 0, fmt.Errorf("%w: CONNECT takes :authority and neither :scheme nor :path", errMalformed)
		}
	} else {
		for _, name := range [...]string{"scheme", "path"} {
			if f.PseudoValue(name) == "" {
				return 0, fmt.Errorf("%w: no :%s", errMalformed, name)
			}
		}
	}
	n, err := checkFields(f.RegularFields())
	if err != nil {
		return 0, err
	}
	if f.StreamEnded() && n > 0 {
		return 0, fmt.Errorf("%w: content-length %d, and END_STREAM on the HEADERS", errMalformed, n)
	}
	return n, nil
}

// checkTrailers checks a request's trailers: a second header block,
// which must end the stream and hold no pseudo-header (RFC 9113 §8.1).
func checkTrailers(f *http2.MetaHeadersFrame) error {
	if err := checkPriority(f); err != nil {
		return err
	}
	if !f.StreamEnded() {
		return fmt.Errorf("%w: a second header block without END_STREAM", errMalformed)
	}
	if p := f.PseudoFields(); len(p) > 0 {
		return fmt.Errorf("%w: %s in trailers", errMalformed, p[0].Name)
	}
	_, err := checkFields(f.RegularFields())
	return err
}

// checkPriority refuses a HEADERS frame's priority that makes its
// stream depend on itself (RFC 9113 §5.3.1, kept from RFC 7540).
func checkPriority(f *http2.MetaHeadersFrame) error {
	if f.HasPriority() && selfDependent(f.StreamID, f.Priority) {
		return fmt.Errorf("%w: stream %d depends on itself", errMalformed, f.StreamID)
	}
	return nil
}

// checkFields checks a block's regular fields: no connection-specific
// field, te only "trailers" (RFC 9113 §8.2.2), content-length a decimal
// number, the same one if repeated. It returns the content-length, or
// noLength.
func checkFields(fields []hpack.HeaderField) (int64, error) {
	n := int64(noLength)
	for _, hf := range fields {
		switch hf.Name {
		case "connection", "proxy-connection", "keep-alive", "transfer-encoding", "upgrade":
			return 0, fmt.Errorf("%w: connection-specific field %s", errMalformed, hf.Name)
		case "te":
			if hf.Value != "trailers" {
				return 0, fmt.Errorf("%w: te %q, not \"trailers\"", errMalformed, hf.Value)
			}
		case "content-length":
			v, err := parseLength(hf.Value)
			if err != nil || n != noLength && v != n {
				return 0, fmt.Errorf("%w: content-length %q", errMalformed, hf.Value)
			}
			n = v
		}
	}
	return n, nil
}

// parseLength parses a content-length: digits only (ParseInt would take
// a sign), at most 18 of them, so that the value fits an int64.
func parseLength(s string) (int64, error) {
	if s == "" || len(s) > 18 {
		return 0, strconv.ErrSyntax
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	return strconv.ParseInt(s, 10, 64)
}

// selfDependent reports whether a priority makes stream id depend on
// itself, a stream error PROTOCOL_ERROR (RFC 9113 §5.3.1, kept from RFC
// 7540), in HEADERS or PRIORITY.
func selfDependent(id uint32, p http2.PriorityParam) bool { return p.StreamDep == id }
