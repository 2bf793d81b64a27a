"""Tests of the grpcio adapter's serve mode: it runs as the harness runs
it, a process speaking adapters/SERVER-PROTOCOL.md on stdin and stdout,
called by a grpcio client in this process. Run from the repository's
root: /usr/bin/python3 -m unittest discover -s adapters/grpcio/tests"""

import json
import os
import queue
import subprocess
import sys
import threading
import time
import unittest

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTER = os.path.join(HERE, "..", "adapter-grpcio")
sys.path.insert(0, os.path.join(HERE, ".."))
import bank  # noqa: E402
import rawh2  # noqa: E402

WAIT = 5.0  # seconds any one line may take to come


class Serving:
    """Serving is the adapter in serve mode; a thread reads its stdout
    into a queue, so that a missing line fails the test in WAIT seconds
    instead of hanging it."""

    def __init__(self):
        self.p = subprocess.Popen([ADAPTER, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.lines = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.channel = self.addr = None

    def _read(self):
        for line in self.p.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, obj):
        line = obj if isinstance(obj, str) else json.dumps(obj)
        self.p.stdin.write(line.encode() + b"\n")
        self.p.stdin.flush()

    def recv(self):
        try:
            line = self.lines.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(f"no line from the adapter in {WAIT}s") from None
        if line is None:
            raise AssertionError("the adapter closed its stdout")
        return json.loads(line)

    def init(self):
        self.send({"type": "init", "protocol": "rpcbench-server/1", "scenario": "test"})
        s = self.recv()
        self.addr = s["addr"]
        self.channel = grpc.insecure_channel(self.addr)
        return s

    def events(self, call):
        """events reads lines up to the end event of call and returns them;
        a line of another call is a test failure, since each test runs
        one call at a time."""
        got = []
        while True:
            e = self.recv()
            if e.get("call") != call:
                raise AssertionError(f"a line of another call: {e}, reading {call!r}")
            got.append(e)
            if e["type"] == "end":
                return got

    def stub(self, method):
        req, resp = bank.METHODS["rpcbench.bank.v1.Bank/" + method]
        return self.channel.unary_unary("/rpcbench.bank.v1.Bank/" + method,
                                        request_serializer=lambda r: bank.encode(req, r),
                                        response_deserializer=lambda b: bank.decode(resp, b))

    def close(self):
        if self.channel is not None:
            self.channel.close()
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        try:
            return self.p.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise AssertionError(f"the adapter did not exit in {WAIT}s of the end of its stdin") from None
        finally:
            self.reader.join(WAIT)
            self.p.stdout.close()


def md(call):
    return (("x-rpcbench-call", call),)


def types(events):
    return [e["type"] for e in events]


class ServeTest(unittest.TestCase):
    def setUp(self):
        self.s = Serving()
        self.addCleanup(self.s.close)

    def test_serving_says_what_is_linked(self):
        s = self.s.init()
        self.assertEqual(sorted(s), ["addr", "protocol", "runtime", "stack", "type", "version"])
        self.assertEqual((s["type"], s["protocol"], s["stack"], s["version"]),
                         ("serving", "rpcbench-server/1", "grpcio", grpc.__version__))
        self.assertRegex(s["runtime"], r"^python \d+\.\d+\.\d+")
        self.assertRegex(s["addr"], r"^127\.0\.0\.1:[1-9]\d*$")

    def test_get_and_debit_execute(self):
        self.s.init()
        r = self.s.stub("Get")({"account": "a"}, timeout=5, metadata=md("g1"))
        ev = self.s.events("g1")
        self.assertEqual(types(ev), ["start", "exec", "end"])
        self.assertEqual(ev[0]["method"], "Get")
        self.assertTrue(4000 < ev[0]["deadline_ms"] <= 5100, ev[0])
        self.assertEqual(ev[1], {"type": "exec", "call": "g1", "method": "Get", "account": "a", "amount": 0,
                                 "balance": 1000})
        self.assertEqual(ev[2], {"type": "end", "call": "g1", "method": "Get", "executed": True, "ctx": "active",
                                 "code": "OK"})
        self.assertEqual(r["budget_ms"], int(ev[0]["deadline_ms"]))
        self.assertEqual((r["account"], r["balance"], r["exec"], r["replayed"]), ("a", 1000, 0, False))

        r = self.s.stub("Debit")({"account": "a", "amount": 10}, timeout=5, metadata=md("d1"))
        ev = self.s.events("d1")
        self.assertEqual(types(ev), ["start", "exec", "end"])
        self.assertEqual(ev[1], {"type": "exec", "call": "d1", "method": "Debit", "account": "a", "amount": 10,
                                 "balance": 990})
        self.assertEqual((ev[2]["executed"], ev[2]["ctx"], ev[2]["code"]), (True, "active", "OK"))
        self.assertEqual((r["balance"], r["exec"]), (990, 1))

        # Without a deadline: null, and a budget of 0.
        r = self.s.stub("Get")({"account": "a"}, metadata=md("g2"))
        ev = self.s.events("g2")
        self.assertIsNone(ev[0]["deadline_ms"])
        self.assertEqual((r["balance"], r["exec"], r["budget_ms"]), (990, 1, 0))

    def test_deadline_during_sleep_is_not_executed(self):
        self.s.init()
        t0 = time.monotonic()
        with self.assertRaises(grpc.RpcError) as cm:
            self.s.stub("Debit")({"account": "a", "amount": 10, "sleep_ms": 2000}, timeout=0.2, metadata=md("d1"))
        self.assertEqual(cm.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        ev = self.s.events("d1")
        self.assertLess(time.monotonic() - t0, 1.5, "the handler slept on past its deadline")
        self.assertEqual(types(ev), ["start", "end"])
        self.assertTrue(0 < ev[0]["deadline_ms"] <= 300, ev[0])
        # grpcio's client ends the stream at its deadline, which may come
        # before the server's (see serve.ctx_state): either, told apart.
        self.assertIn((ev[1]["ctx"], ev[1]["code"]),
                      [("deadline_exceeded", "DEADLINE_EXCEEDED"), ("cancelled", "CANCELLED")])
        self.assertFalse(ev[1]["executed"])
        self.assertEqual(self.s.stub("Get")({"account": "a"}, metadata=md("g1"))["balance"], 1000)

    def test_work_past_deadline_is_executed(self):
        # work_ms does not look at the context: the debit executes after
        # the client's deadline, and the handler answers OK to an RPC
        # grpcio has already ended.
        self.s.init()
        with self.assertRaises(grpc.RpcError) as cm:
            self.s.stub("Debit")({"account": "a", "amount": 10, "work_ms": 300}, timeout=0.1, metadata=md("w1"))
        self.assertEqual(cm.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        ev = self.s.events("w1")
        self.assertEqual(types(ev), ["start", "exec", "end"])
        self.assertEqual(ev[1], {"type": "exec", "call": "w1", "method": "Debit", "account": "a", "amount": 10,
                                 "balance": 990})
        self.assertIn(ev[2]["ctx"], ["deadline_exceeded", "cancelled"], ev[2])
        self.assertEqual((ev[2]["executed"], ev[2]["code"]), (True, "OK"))
        self.assertEqual(self.s.stub("Get")({"account": "a"}, metadata=md("g1"))["balance"], 990)

    def test_every_deadline_expiry_reads_deadline_exceeded(self):
        # Raw requests, whose client never ends the stream: only the
        # server's deadline ends them. 36 of them, in rounds of 12 at once
        # (fewer than the adapter's threads).
        self.s.init()
        req = bank.encode("DebitRequest", {"account": "a", "amount": 1, "sleep_ms": 2000})
        ends = []
        for r in range(3):
            socks = [rawh2.request(self.s.addr, "/rpcbench.bank.v1.Bank/Debit", req,
                                   [("grpc-timeout", "50m"), ("x-rpcbench-call", f"r{r}-{i}")]) for i in range(12)]
            try:
                while len(ends) < 12 * (r + 1):
                    e = self.s.recv()
                    self.assertNotEqual(e["type"], "exec", e)
                    if e["type"] == "end":
                        ends.append((e["executed"], e["ctx"], e["code"]))
            finally:
                for s in socks:
                    s.close()
        self.assertEqual(ends, [(False, "deadline_exceeded", "DEADLINE_EXCEEDED")] * 36)

    def test_cancel_during_sleep_is_not_executed(self):
        self.s.init()
        f = self.s.stub("Debit").future({"account": "a", "amount": 10, "sleep_ms": 2000}, timeout=5,
                                        metadata=md("d1"))
        self.assertEqual(self.s.recv()["type"], "start")  # the handler is in its sleep
        t0 = time.monotonic()
        f.cancel()
        self.assertEqual(self.s.events("d1"), [{"type": "end", "call": "d1", "method": "Debit", "executed": False,
                                                "ctx": "cancelled", "code": "CANCELLED"}])
        self.assertLess(time.monotonic() - t0, 1.5, "the handler slept on past its cancel")
        self.assertEqual(self.s.stub("Get")({"account": "a"}, metadata=md("g1"))["balance"], 1000)

    def test_echo_executes_nothing(self):
        self.s.init()
        r = self.s.stub("Echo")({"payload": b"\x00hi\xff"}, timeout=5, metadata=md("e1"))
        self.assertEqual(r, {"payload": b"\x00hi\xff"})
        ev = self.s.events("e1")
        self.assertEqual(types(ev), ["start", "end"])
        self.assertEqual(ev[1], {"type": "end", "call": "e1", "method": "Echo", "executed": False, "ctx": "active",
                                 "code": "OK"})

    def test_amount_not_positive_is_invalid_argument(self):
        self.s.init()
        for amount in (0, -5):
            call = f"d{amount}"
            with self.assertRaises(grpc.RpcError) as cm:
                self.s.stub("Debit")({"account": "a", "amount": amount}, timeout=5, metadata=md(call))
            self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, amount)
            ev = self.s.events(call)
            self.assertEqual(types(ev), ["start", "end"], amount)
            self.assertEqual((ev[1]["executed"], ev[1]["code"]), (False, "INVALID_ARGUMENT"), amount)
        self.assertEqual(self.s.stub("Get")({"account": "a"}, metadata=md("g1"))["balance"], 1000)

    def test_an_error_status_carries_no_message(self):
        # The handler ends with context.abort: set_code and a returned
        # reply would put the reply's message before the error trailers.
        self.s.init()
        sock = rawh2.request(self.s.addr, "/rpcbench.bank.v1.Bank/Debit",
                             bank.encode("DebitRequest", {"account": "a", "amount": 0}), [("x-rpcbench-call", "d1")])
        try:
            got = rawh2.frames(sock)
        finally:
            sock.close()
        self.assertEqual(got, [(rawh2.HEADERS, rawh2.END_HEADERS | rawh2.END_STREAM)], "want trailers only")
        self.assertEqual(self.s.events("d1")[-1]["code"], "INVALID_ARGUMENT")

    def test_without_call_metadata_the_call_is_empty(self):
        self.s.init()
        self.s.stub("Get")({"account": "a"}, timeout=5)
        self.assertEqual(types(self.s.events("")), ["start", "exec", "end"])

    def test_shutdown(self):
        self.s.init()
        self.s.send({"type": "shutdown"})
        self.assertEqual(self.s.recv(), {"type": "shutdown_ok"})
        self.assertEqual(self.s.close(), 0)

    def test_shutdown_cancels_sleeping_handlers_first(self):
        self.s.init()
        n = 8
        fs = [self.s.stub("Debit").future({"account": "a", "amount": 10, "sleep_ms": 10000}, timeout=20,
                                          metadata=md(f"d{i}")) for i in range(n)]
        self.assertEqual(sorted(self.s.recv()["call"] for _ in fs), sorted(f"d{i}" for i in range(n)))
        t0 = time.monotonic()
        self.s.send({"type": "shutdown"})
        # grpcio's stop is done once its calls are, while a cancelled
        # handler may still be returning: a race, which a stop that did
        # not wait for its handlers lost in about 2 runs of 5.
        for _ in fs:
            end = self.s.recv()
            self.assertEqual(end["type"], "end", "shutdown_ok before every handler's end")
            self.assertEqual((end["executed"], end["ctx"], end["code"]), (False, "cancelled", "CANCELLED"))
        self.assertEqual(self.s.recv(), {"type": "shutdown_ok"})
        self.assertLess(time.monotonic() - t0, 3, "shutdown_ok later than the protocol's 3 s")
        # grpcio 1.51.1's client sees UNAVAILABLE here, not the handlers'
        # CANCELLED: the server's stop closes the connection as it cancels.
        for f in fs:
            self.assertIsNotNone(f.exception())
        self.assertEqual(self.s.close(), 0)

    def test_end_of_stdin_without_shutdown(self):
        self.s.init()
        self.assertEqual(self.s.close(), 0)
        self.assertIsNone(self.s.lines.get(timeout=WAIT), "a line after the end of stdin")


class FatalTest(unittest.TestCase):
    def test_bad_harness_lines(self):
        init = {"type": "init", "protocol": "rpcbench-server/1"}
        for name, lines in [
            ("not json", ["{not json"]),
            ("not an object", ["[1]"]),
            ("shutdown before init", [{"type": "shutdown"}]),
            ("other protocol", [dict(init, protocol="rpcbench-adapter/1")]),
            ("unknown field", [dict(init, extra=1)]),
            ("scenario not a string", [dict(init, scenario=7)]),
            ("second init", [init, init]),
            ("unknown type", [init, {"type": "call"}]),
            ("bad shutdown", [init, {"type": "shutdown", "now": True}]),
        ]:
            with self.subTest(name):
                s = Serving()
                try:
                    for line in lines:
                        s.send(line)
                    e = s.recv()
                    if lines[0] is init:
                        self.assertEqual(e["type"], "serving")
                        e = s.recv()
                    self.assertEqual(sorted(e), ["text", "type"])
                    self.assertEqual(e["type"], "fatal")
                finally:
                    code = s.close()
                self.assertEqual(code, 2)


class DecodeTest(unittest.TestCase):
    """bank.decode reads requests from any client in serve mode."""

    def test_requests(self):
        good = bank.encode("DebitRequest", {"account": "a", "amount": -3, "sleep_ms": 7})
        self.assertEqual(bank.decode("DebitRequest", good), {"account": "a", "amount": -3, "sleep_ms": 7,
                                                             "work_ms": 0})
        # work_ms: GetRequest's field 3, DebitRequest's field 4.
        self.assertEqual(bank.decode("DebitRequest", bytes.fromhex("0a0161100a20ac02")),
                         {"account": "a", "amount": 10, "sleep_ms": 0, "work_ms": 300})
        self.assertEqual(bank.decode("GetRequest", bytes.fromhex("0a0161100518ac02")),
                         {"account": "a", "sleep_ms": 5, "work_ms": 300})
        # account as a varint, an unknown fixed64 field 9: both skipped.
        odd = b"\x08\x05" + b"\x49" + b"\x00" * 8 + good
        self.assertEqual(bank.decode("DebitRequest", odd), {"account": "a", "amount": -3, "sleep_ms": 7,
                                                            "work_ms": 0})
        for name, b in [("truncated fixed64", b"\x49\x00"), ("truncated string", b"\x0a\x05ab"),
                        ("truncated varint", b"\x10\x80"), ("field 0", b"\x00\x01"), ("group", b"\x0b"),
                        ("bad utf-8", b"\x0a\x01\xff")]:
            with self.subTest(name), self.assertRaises(ValueError):
                bank.decode("DebitRequest", b)


if __name__ == "__main__":
    unittest.main()
