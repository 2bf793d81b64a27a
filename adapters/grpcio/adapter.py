"""rpcbench's client-under-test adapter for Python grpcio (C-core): it
speaks adapters/PROTOCOL.md (rpcbench-adapter/1) on stdin and stdout
and makes each call once through channel.unary_unary, configured only by
what the call's channel carries: the service config as the
grpc.service_config channel option, keepalive as grpc.keepalive_*. It
never retries or judges; its logs and grpcio's go to stderr. With the
argument serve it is the server adapter instead (serve.py)."""

import json
import platform
import sys
import threading
import time

try:
    import grpc
except ImportError as err:  # the wrapper runs Debian's /usr/bin/python3
    sys.stderr.write(f"grpcio: cannot import grpc ({err}): apt-get install python3-grpcio python3-protobuf, "
                     "and run it with Debian's /usr/bin/python3 (PYTHON overrides)\n")
    sys.exit(1)

import bank
from protocol import MAX_LINE, ProtocolError, fields, string_map, want

PROTOCOL = "rpcbench-adapter/1"
DRAIN_TIMEOUT = 2.0  # seconds shutdown waits for the calls in flight

# What grpcio's C-core implements (README.md beside this file says why
# each is so).
CAPABILITIES = {
    "retry_policy": True,
    "hedging": False,
    "throttling": True,
    "transparent_retry": True,
    "keepalive": True,
    "pushback": True,
    "wait_for_ready": True,
    # C-core honours a retryPolicy's perAttemptRecvTimeout only under
    # its channel option grpc.experimental.enable_hedging, which
    # channel_options sets when a service config names one.
    "per_attempt_timeout": True,
}


class CallError(Exception):
    """A call the adapter did not invoke: its kind and text."""

    def __init__(self, kind, text):
        super().__init__(text)
        self.kind = kind


def _keepalive(name, v):
    integer, boolean = want("integer"), want("bool")
    return fields(want("object")(name, v), {"time_ms": integer, "timeout_ms": integer, "permit_without_stream": boolean})


def _channel(name, v):
    s = want("string")
    return fields(want("object")(name, v), {"id": s, "target": s},
                  {"service_config": want("object"), "keepalive": _keepalive})


def decode_call(obj):
    c = fields(obj, {"id": want("integer"), "channel": _channel, "method": want("string"),
                     "request": want("object"), "deadline_ms": want("integer"),
                     "metadata": string_map, "wait_for_ready": want("bool")})
    if c["deadline_ms"] < 1:
        raise ProtocolError(f'deadline_ms {c["deadline_ms"]} < 1')
    return c


def channel_options(w):
    """channel_options are grpcio's channel options for w, a decoded
    channel: nothing but what it carries, so every other option is
    grpcio's default."""
    opts = []
    if "service_config" in w:
        opts.append(("grpc.service_config", json.dumps(w["service_config"], sort_keys=True)))
        if "perAttemptRecvTimeout" in json.dumps(w["service_config"]):
            # C-core parses perAttemptRecvTimeout only with this option
            # on; without it the timeout is silently ignored.
            opts.append(("grpc.experimental.enable_hedging", 1))
    if "keepalive" in w:
        k = w["keepalive"]
        opts += [("grpc.keepalive_time_ms", k["time_ms"]), ("grpc.keepalive_timeout_ms", k["timeout_ms"]),
                 ("grpc.keepalive_permit_without_calls", 1 if k["permit_without_stream"] else 0)]
    return opts


class Session:
    def __init__(self, out, log):
        self.out, self.log = out, log
        self.out_lock = threading.Lock()
        self.seen = set()
        self.channels = {}  # id -> (target, options, grpc.Channel)
        self.chan_lock = threading.Lock()
        self.in_flight = 0
        self.cond = threading.Condition()

    def send(self, msg):
        line = json.dumps(msg, separators=(",", ":")) + "\n"
        with self.out_lock:
            self.out.write(line)
            self.out.flush()

    def fatal(self, text):
        self.log(f"fatal: {text}")
        self.send({"type": "fatal", "text": text})
        return 2

    def call_error(self, cid, kind, text):
        self.log(f"call {cid}: call_error {kind}: {text}")
        self.send({"type": "call_error", "id": cid, "kind": kind, "text": text})

    def run(self, stdin):
        inited = False
        n = 0
        while True:
            line = stdin.readline(MAX_LINE + 2)
            if not line:
                break
            n += 1
            if line.endswith(b"\n"):
                line = line[:-1]
            elif len(line) > MAX_LINE:
                return self.fatal(f"line {n}: longer than {MAX_LINE} bytes")
            if len(line) > MAX_LINE:
                return self.fatal(f"line {n}: longer than {MAX_LINE} bytes")
            try:
                obj = json.loads(line.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as err:
                return self.fatal(f"line {n}: not a JSON object: {err}")
            if not isinstance(obj, dict):
                return self.fatal(f"line {n}: not a JSON object")
            typ = obj.get("type")
            if not isinstance(typ, str):
                return self.fatal(f'line {n}: no string "type"')
            if not inited and typ != "init":
                return self.fatal(f"line {n}: {typ} before init")
            if typ == "init":
                try:
                    w = fields(obj, {"protocol": want("string")}, {"scenario": want("string")})
                except ProtocolError as err:
                    return self.fatal(f"line {n}: bad init: {err}")
                if inited:
                    return self.fatal(f"line {n}: bad init: a second init")
                inited = True
                self.log(f"init: protocol {w['protocol']}, scenario {w.get('scenario', '')!r}")
                self.send({"type": "init_ok", "protocol": PROTOCOL, "stack": "grpcio", "version": grpc.__version__,
                           "runtime": f"python {platform.python_version()}", "capabilities": CAPABILITIES})
            elif typ == "call":
                cid = obj.get("id")
                if not isinstance(cid, int) or isinstance(cid, bool) or cid < 1:
                    return self.fatal(f"line {n}: call without a usable id")
                self.start_call(obj)
            elif typ == "shutdown":
                try:
                    fields(obj, {})
                except ProtocolError as err:
                    return self.fatal(f"line {n}: bad shutdown: {err}")
                self.drain()
                self.send({"type": "shutdown_ok"})
            else:
                return self.fatal(f"line {n}: unknown type {typ!r}")
        self.drain()
        return 0

    def channel(self, w):
        """channel returns the grpc.Channel w names, made the first time;
        a conflicting later configuration is a protocol call_error."""
        opts = channel_options(w)
        with self.chan_lock:
            have = self.channels.get(w["id"])
            if have:
                if have[0] != w["target"] or have[1] != opts:
                    raise CallError("protocol", f"channel {w['id']} was first configured otherwise")
                return have[2]
            try:
                ch = grpc.insecure_channel(w["target"], options=opts)
            except Exception as err:  # grpcio raises for options it cannot take
                raise CallError("config", str(err)) from None
            self.channels[w["id"]] = (w["target"], opts, ch)
            self.log(f"channel {w['id']}: {w['target']}, options {opts}")
            return ch

    def start_call(self, obj):
        cid = obj["id"]
        if cid in self.seen:
            self.call_error(cid, "duplicate_id", f"id {cid} was used before")
            return
        self.seen.add(cid)
        try:
            c = decode_call(obj)
        except ProtocolError as err:
            self.call_error(cid, "protocol", str(err))
            return
        try:
            fut, start, method = self.invoke(c)
        except CallError as err:
            self.call_error(cid, err.kind, str(err))
            return
        with self.cond:
            self.in_flight += 1
        fut.add_done_callback(lambda f: self.answer(cid, f, start, method))

    def invoke(self, c):
        m = bank.METHODS.get(c["method"])
        if not m:
            raise CallError("unsupported", f'no method "{c["method"]}"')
        req_msg, resp_msg = m
        try:
            req = bank.from_json(req_msg, c["request"])
        except ValueError as err:
            raise CallError("bad_request", str(err)) from None
        md = []
        for k, v in c["metadata"].items():
            # A -bin value goes as the string's bytes, as grpc-go sends a
            # string it is given.
            md.append((k, v.encode("utf-8") if k.lower().endswith("-bin") else v))
        ch = self.channel(c["channel"])
        stub = ch.unary_unary("/" + c["method"],
                              request_serializer=lambda r: bank.encode(req_msg, r),
                              response_deserializer=lambda b: bank.decode(resp_msg, b))
        start = time.perf_counter()
        try:
            fut = stub.future(req, timeout=c["deadline_ms"] / 1000, metadata=md, wait_for_ready=c["wait_for_ready"])
        except ValueError as err:  # grpcio checks metadata before sending
            raise CallError("unsupported", f"metadata: {err}") from None
        return fut, start, resp_msg

    def answer(self, cid, fut, start, resp_msg):
        elapsed = (time.perf_counter() - start) * 1000
        try:
            code = fut.code()
            err = fut.exception()
            msg = {"type": "result", "id": cid, "code": code.name, "code_num": code.value[0],
                   "message": "" if err is None else (fut.details() or ""),
                   "response": None if err is not None else bank.to_json(resp_msg, fut.result()),
                   "elapsed_ms": round(elapsed, 3),
                   "headers": md_object(fut.initial_metadata()),
                   "trailers": md_object(fut.trailing_metadata())}
            self.send(msg)
        finally:
            with self.cond:
                self.in_flight -= 1
                self.cond.notify_all()

    def drain(self):
        with self.cond:
            if not self.cond.wait_for(lambda: self.in_flight == 0, DRAIN_TIMEOUT):
                self.log(f"shutdown: {self.in_flight} calls still in flight after {DRAIN_TIMEOUT}s; closing their channels")
        with self.chan_lock:
            for _, _, ch in self.channels.values():
                ch.close()
            self.channels.clear()


def md_object(md):
    """md_object is metadata as the protocol carries it: name -> strings,
    -bin values base64."""
    import base64
    out = {}
    for k, v in md or ():
        if isinstance(v, bytes):
            v = base64.b64encode(v).decode("ascii")
        out.setdefault(k, []).append(v)
    return out


def main():
    def log(text):
        sys.stderr.write(f"grpcio: {time.strftime('%Y-%m-%dT%H:%M:%S')} {text}\n")
        sys.stderr.flush()
    if sys.argv[1:] == ["serve"]:
        import serve  # the server mode, SERVER-PROTOCOL.md
        return serve.Server(sys.stdout, log).run(sys.stdin.buffer)
    if sys.argv[1:]:
        log(f"unknown arguments {sys.argv[1:]}: want none (client mode) or serve")
        return 2
    return Session(sys.stdout, log).run(sys.stdin.buffer)


if __name__ == "__main__":
    sys.exit(main())
