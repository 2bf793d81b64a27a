"""Tests of the grpcio adapter: it runs as the harness runs it, a
process speaking adapters/PROTOCOL.md on stdin and stdout, against a
grpcio server in this process. Run from the repository's root:
/usr/bin/python3 -m unittest discover -s adapters/grpcio/tests"""

import json
import os
import subprocess
import sys
import threading
import unittest
from concurrent import futures

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTER = os.path.join(HERE, "..", "adapter-grpcio")
sys.path.insert(0, os.path.join(HERE, ".."))
import bank  # noqa: E402
import rawh2  # noqa: E402

CONFIGS = os.path.join(HERE, "..", "..", "..", "configs", "serviceconfig")


class Bank:
    """A grpcio server of the Bank service: Get answers the account,
    after `slow_first_ms` on the first attempt of each call (by its
    x-rpcbench-call) and its sleep_ms on every attempt, with the
    attempt's number in its x-attempt trailer; Debit refuses UNAVAILABLE
    the first `refuse` times, counting each."""

    def __init__(self, refuse=0, slow_first_ms=0):
        self.refuse, self.debits = refuse, 0
        self.slow_first_ms, self.gets = slow_first_ms, {}  # x-rpcbench-call -> attempts seen
        self.lock = threading.Lock()
        handlers = {
            "Get": grpc.unary_unary_rpc_method_handler(
                self.get, request_deserializer=lambda b: bank.decode("GetRequest", b),
                response_serializer=lambda r: bank.encode("AccountReply", r)),
            "Debit": grpc.unary_unary_rpc_method_handler(
                self.debit, request_deserializer=lambda b: bank.decode("DebitRequest", b),
                response_serializer=lambda r: bank.encode("AccountReply", r)),
        }
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("rpcbench.bank.v1.Bank", handlers),))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def get(self, req, ctx):
        md = dict(ctx.invocation_metadata())
        name = md.get("x-rpcbench-call", "")
        with self.lock:
            n = self.gets[name] = self.gets.get(name, 0) + 1
        sleep_ms = req["sleep_ms"] + (self.slow_first_ms if n == 1 else 0)
        if sleep_ms:
            threading.Event().wait(sleep_ms / 1000)
        ctx.set_trailing_metadata((("x-saw-call", name), ("x-attempt", str(n))))
        return {"account": req["account"], "balance": 1000}

    def debit(self, req, ctx):
        with self.lock:
            self.debits += 1
            if self.debits <= self.refuse:
                ctx.abort(grpc.StatusCode.UNAVAILABLE, "refused")
        return {"account": req["account"], "balance": 1000 - req["amount"], "exec": 1}

    def attempts(self, name):
        with self.lock:
            return self.gets.get(name, 0)

    def stop(self):
        self.server.stop(None)


class Adapter:
    def __init__(self):
        self.p = subprocess.Popen([ADAPTER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(self, obj):
        line = obj if isinstance(obj, str) else json.dumps(obj)
        self.p.stdin.write(line.encode() + b"\n")
        self.p.stdin.flush()

    def recv(self):
        line = self.p.stdout.readline()
        if not line:
            raise AssertionError("the adapter closed its stdout")
        return json.loads(line)

    def init(self):
        self.send({"type": "init", "protocol": "rpcbench-adapter/1", "scenario": "test"})
        return self.recv()

    def results(self, n):
        """results reads n answers, which come in any order, by id."""
        out = {}
        for _ in range(n):
            r = self.recv()
            out[r["id"]] = r
        return out

    def close(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        return self.p.wait(10)


def config(name):
    """config is the harness's service config in file name."""
    with open(os.path.join(CONFIGS, name)) as f:
        return json.load(f)


def call(cid, port, method="Get", request=None, deadline_ms=2000, channel="ch1", service_config=None, keepalive=None,
         **extra):
    ch = {"id": channel, "target": f"127.0.0.1:{port}"}
    if service_config is not None:
        ch["service_config"] = service_config
    if keepalive is not None:
        ch["keepalive"] = keepalive
    c = {"type": "call", "id": cid, "channel": ch, "method": "rpcbench.bank.v1.Bank/" + method,
         "request": request if request is not None else {"account": "a"}, "deadline_ms": deadline_ms,
         "metadata": {"x-rpcbench-call": f"c-{cid}"}, "wait_for_ready": False}
    c.update(extra)
    return c


class AdapterTest(unittest.TestCase):
    def setUp(self):
        self.bank = Bank()
        self.a = Adapter()
        self.addCleanup(self.bank.stop)
        self.addCleanup(self.a.close)

    def test_init_ok_says_what_is_linked(self):
        ok = self.a.init()
        self.assertEqual(ok["type"], "init_ok")
        self.assertEqual(ok["stack"], "grpcio")
        self.assertEqual(ok["version"], grpc.__version__)
        self.assertEqual(sorted(ok["capabilities"]), sorted(
            ["retry_policy", "hedging", "throttling", "transparent_retry", "keepalive", "pushback", "wait_for_ready",
             "per_attempt_timeout"]))

    def test_get_ok_with_metadata_and_trailers(self):
        self.a.init()
        self.a.send(call(1, self.bank.port, request={"account": "acct-1"}))
        r = self.a.recv()
        self.assertEqual((r["type"], r["id"], r["code"], r["code_num"]), ("result", 1, "OK", 0))
        self.assertEqual(r["response"], {"account": "acct-1", "balance": "1000"})
        self.assertEqual(r["trailers"].get("x-saw-call"), ["c-1"])

    def test_deadline_exceeded(self):
        self.a.init()
        self.a.send(call(1, self.bank.port, request={"account": "a", "sleepMs": "500"}, deadline_ms=50))
        r = self.a.recv()
        self.assertEqual((r["code"], r["code_num"], r["response"]), ("DEADLINE_EXCEEDED", 4, None))
        self.assertLess(r["elapsed_ms"], 450)

    def test_retry_policy_retries_unavailable(self):
        retry = config("retry.json")
        b = Bank(refuse=2)
        self.addCleanup(b.stop)
        self.a.init()
        self.a.send(call(1, b.port, method="Debit", request={"account": "a", "amount": "10"}, service_config=retry))
        r = self.a.recv()
        self.assertEqual(r["code"], "OK")
        self.assertEqual(b.debits, 3)

    def test_every_harness_config_is_accepted(self):
        self.a.init()
        for i, name in enumerate(sorted(os.listdir(CONFIGS)), 1):
            with open(os.path.join(CONFIGS, name)) as f:
                sc = json.load(f)
            self.a.send(call(i, self.bank.port, channel=name, service_config=sc))
            r = self.a.recv()
            self.assertEqual((r["type"], r["code"]), ("result", "OK"), name)

    def test_per_attempt_timeout_retries_a_silent_attempt(self):
        """Under the harness's per-attempt config (perAttemptRecvTimeout
        0.2s), a get whose first attempt the server holds 1 s is answered
        OK by a later attempt long before that second is out; the
        control, the retry config without perAttemptRecvTimeout, is
        answered by its first attempt once the second is out. C-core
        honours the timeout only under grpc.experimental.enable_hedging,
        which the adapter turns on: without it both calls wait."""
        b = Bank(slow_first_ms=1000)
        self.addCleanup(b.stop)
        self.a.init()
        self.a.send(call(1, b.port, channel="per-attempt", service_config=config("per-attempt.json"), deadline_ms=5000))
        self.a.send(call(2, b.port, channel="retry", service_config=config("retry.json"), deadline_ms=5000))
        rs = self.a.results(2)
        pa, control = rs[1], rs[2]
        self.assertEqual(pa["code"], "OK", pa)
        self.assertNotEqual(pa["trailers"].get("x-attempt"), ["1"], f"per-attempt: answered by the first attempt: {pa}")
        self.assertGreaterEqual(b.attempts("c-1"), 2)
        self.assertLess(pa["elapsed_ms"], 1000, f"per-attempt: want an answer before the first attempt's 1 s: {pa}")
        self.assertEqual((control["code"], control["trailers"].get("x-attempt")), ("OK", ["1"]), control)
        self.assertEqual(b.attempts("c-2"), 1)
        self.assertGreaterEqual(control["elapsed_ms"], 1000, control)

    def test_keepalive_ends_a_silent_call(self):
        """A get in flight on a connection gone silent ends UNAVAILABLE
        before its 4 s deadline on a channel with keepalive (1 s, 0.5 s:
        C-core 1.51.1 takes a client's keepalive time as given, with no
        floor like grpc-go's 10 s), no sooner than the ping's time, and
        the peer read the ping; on a channel without keepalive, the
        control, the same get runs to its deadline and no ping is sent."""
        deadline_ms = 4000
        with_ka, without = rawh2.SilentPeer(), rawh2.SilentPeer()
        self.addCleanup(with_ka.close)
        self.addCleanup(without.close)
        self.a.init()
        self.a.send(call(1, with_ka.port, channel="keepalive", deadline_ms=deadline_ms,
                         keepalive={"time_ms": 1000, "timeout_ms": 500, "permit_without_stream": False}))
        self.a.send(call(2, without.port, channel="none", deadline_ms=deadline_ms))
        rs = self.a.results(2)
        ka, control = rs[1], rs[2]
        self.assertEqual(ka["code"], "UNAVAILABLE", f"with keepalive: want UNAVAILABLE before the deadline: {ka}")
        self.assertGreaterEqual(ka["elapsed_ms"], 1000, ka)
        self.assertTrue(with_ka.headers.acquire(timeout=0), "with keepalive: the call never reached the peer")
        self.assertGreaterEqual(with_ka.pings_read(), 1)
        self.assertEqual(control["code"], "DEADLINE_EXCEEDED", control)
        self.assertTrue(without.headers.acquire(timeout=0), "without keepalive: the call never reached the peer")
        self.assertEqual(without.pings_read(), 0)

    def test_call_errors(self):
        self.a.init()
        port = self.bank.port
        self.a.send(call(1, port))
        self.assertEqual(self.a.recv()["code"], "OK")
        for obj, kind in [
            (call(1, port), "duplicate_id"),
            (call(2, port, method="Nope"), "unsupported"),
            (call(3, port, request={"account": 7}), "bad_request"),
            (call(4, port, extra_field=1), "protocol"),
            (call(5, port, deadline_ms=0), "protocol"),
            (call(6, port, service_config={"methodConfig": []}), "protocol"),  # ch1 was built without one
        ]:
            self.a.send(obj)
            r = self.a.recv()
            self.assertEqual((r["type"], r["id"], r["kind"]), ("call_error", obj["id"], kind), obj)

    def test_shutdown(self):
        self.a.init()
        self.a.send({"type": "shutdown"})
        self.assertEqual(self.a.recv(), {"type": "shutdown_ok"})
        self.assertEqual(self.a.close(), 0)

    def test_bad_line_is_fatal(self):
        self.a.init()
        self.a.send("{not json")
        self.assertEqual(self.a.recv()["type"], "fatal")
        self.assertEqual(self.a.close(), 2)


class BankTest(unittest.TestCase):
    def test_round_trip(self):
        v = {"account": "ä", "balance": -5, "exec": 1 << 40, "replayed": True, "budget_ms": 7}
        self.assertEqual(bank.decode("AccountReply", bank.encode("AccountReply", v)), v)

    def test_json(self):
        self.assertEqual(bank.from_json("DebitRequest", {"account": "a", "amount": "10", "sleepMs": 3}),
                         {"account": "a", "amount": 10, "sleep_ms": 3})
        with self.assertRaises(ValueError):
            bank.from_json("DebitRequest", {"amount": "1.5"})
        self.assertEqual(bank.to_json("AccountReply", {"account": "a", "balance": 0, "budget_ms": 5}),
                         {"account": "a", "budgetMs": "5"})


if __name__ == "__main__":
    unittest.main()
