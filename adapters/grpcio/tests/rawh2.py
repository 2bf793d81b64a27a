"""rawh2 sends one gRPC request over a cleartext HTTP/2 connection of
its own, without a gRPC client: the headers as given (grpc-timeout
included, which grpcio's client does not let a caller set) and the
whole request, and then nothing. Unlike a gRPC client it never ends the
stream at the deadline, so only the server can; the harness's raw
client can do the same. SilentPeer is the other side: a server whose
connections go silent once the client's preface is read."""

import socket
import struct
import threading

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS, HEADERS, DATA, RST_STREAM = 4, 1, 0, 3
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


def frames(sock, stream=1):
    """frames reads sock until stream ends (END_STREAM or RST_STREAM) and
    returns (type, flags) of each of its frames; frames of other streams
    are left out. It answers nothing: C-core does not wait for the
    SETTINGS acknowledgement to answer a request."""
    buf, out = b"", []
    while True:
        while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[:3], "big"):
            n = int.from_bytes(buf[:3], "big")
            typ, flags, sid = buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
            buf = buf[9 + n:]
            if sid != stream:
                continue
            out.append((typ, flags))
            if typ == RST_STREAM or flags & END_STREAM:
                return out
        d = sock.recv(65536)
        if not d:
            raise ConnectionError(f"the connection closed before stream {stream} ended, after {out}")
        buf += d


PING = 6


class SilentPeer:
    """SilentPeer is a cleartext HTTP/2 server on a loopback port of its
    own that never answers: on each connection it reads the client's
    preface, sends its own SETTINGS, and from then on reads every frame
    and writes nothing, not even a PING's acknowledgement, as a peer
    behind a link gone silent would. close() closes its listener and
    connections and joins its threads."""

    def __init__(self):
        self.lock = threading.Lock()  # guards conns, pings, closed
        self.conns, self.pings, self.closed = [], 0, False
        self.headers = threading.Semaphore(0)  # released once per HEADERS frame read
        self.ln = socket.create_server(("127.0.0.1", 0))
        self.port = self.ln.getsockname()[1]
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self):
        while True:
            try:
                c, _ = self.ln.accept()
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(c,), daemon=True)
            with self.lock:
                if self.closed:
                    c.close()
                    return
                self.conns.append(c)
                self.threads.append(t)
            t.start()

    def _read(self, c, n):
        buf = b""
        while len(buf) < n:
            d = c.recv(n - len(buf))
            if not d:
                raise ConnectionError("closed")
            buf += d
        return buf

    def _serve(self, c):
        try:
            self._read(c, len(PREFACE))
            c.sendall(frame(SETTINGS, 0, 0, b""))
            while True:
                hdr = self._read(c, 9)
                self._read(c, int.from_bytes(hdr[:3], "big"))
                if hdr[3] == HEADERS:
                    self.headers.release()
                elif hdr[3] == PING:
                    with self.lock:
                        self.pings += 1
        except OSError:  # ConnectionError included: the client or close() ended it
            return

    def pings_read(self):
        with self.lock:
            return self.pings

    def close(self):
        with self.lock:
            self.closed = True
            conns, threads = list(self.conns), list(self.threads)
        try:
            self.ln.shutdown(socket.SHUT_RDWR)  # wakes accept, which close alone does not
        except OSError:
            pass
        self.ln.close()
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()
        for t in threads:
            t.join(5)
