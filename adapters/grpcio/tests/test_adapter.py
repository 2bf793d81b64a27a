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

CONFIGS = os.path.join(HERE, "..", "..", "..", "internal", "cut", "grpcconfig")


class Bank:
    """A grpcio server of the Bank service: Get answers the account, and
    Debit refuses UNAVAILABLE the first `refuse` times, counting each."""

    def __init__(self, refuse=0):
        self.refuse, self.debits = refuse, 0
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
        if req["sleep_ms"]:
            threading.Event().wait(req["sleep_ms"] / 1000)
        md = dict(ctx.invocation_metadata())
        ctx.set_trailing_metadata((("x-saw-call", md.get("x-rpcbench-call", "")),))
        return {"account": req["account"], "balance": 1000}

    def debit(self, req, ctx):
        with self.lock:
            self.debits += 1
            if self.debits <= self.refuse:
                ctx.abort(grpc.StatusCode.UNAVAILABLE, "refused")
        return {"account": req["account"], "balance": 1000 - req["amount"], "exec": 1}

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

    def close(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        return self.p.wait(10)


def call(cid, port, method="Get", request=None, deadline_ms=2000, channel="ch1", service_config=None, **extra):
    ch = {"id": channel, "target": f"127.0.0.1:{port}"}
    if service_config is not None:
        ch["service_config"] = service_config
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
        with open(os.path.join(CONFIGS, "retry.json")) as f:
            retry = json.load(f)
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
