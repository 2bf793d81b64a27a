"""rawh2 sends one gRPC request over a cleartext HTTP/2 connection of
its own, without a gRPC client: the headers as given (grpc-timeout
included, which grpcio's client does not let a caller set) and the
whole request, and then nothing. Unlike a gRPC client it never ends the
stream at the deadline, so only the server can; the harness's raw
client can do the same."""

import socket
import struct

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS, HEADERS, DATA = 4, 1, 0
END_STREAM, END_HEADERS = 0x1, 0x4


def frame(typ, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([typ, flags]) + struct.pack(">I", stream) + payload


def literal(name, value):
    """literal is an HPACK literal header field without indexing, with a
    new name, neither Huffman-coded; both must be shorter than 127
    bytes, so that each length fits its 7-bit prefix."""
    n, v = name.encode(), value.encode()
    if len(n) >= 127 or len(v) >= 127:
        raise ValueError(f"header {name}: longer than this encoder takes")
    return b"\x00" + bytes([len(n)]) + n + bytes([len(v)]) + v


def request(addr, path, message, headers):
    """request opens a connection to addr, sends the request on stream 1,
    and returns the socket, which the caller closes; it reads nothing,
    and C-core answers what it writes without waiting for it to be
    read."""
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=5)
    block = b"".join(literal(k, v) for k, v in [
        (":method", "POST"), (":scheme", "http"), (":path", path), (":authority", addr),
        ("content-type", "application/grpc"), ("te", "trailers")] + list(headers))
    body = b"\x00" + struct.pack(">I", len(message)) + message
    s.sendall(PREFACE + frame(SETTINGS, 0, 0, b"") + frame(HEADERS, END_HEADERS, 1, block)
              + frame(DATA, END_STREAM, 1, body))
    return s
