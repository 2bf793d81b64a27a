"""rpcbench's server-under-test adapter for Python grpcio (C-core): it
speaks adapters/SERVER-PROTOCOL.md (rpcbench-server/1) on stdin and
stdout, serves the rpcbench.bank.v1.Bank service with grpc.server's
default options on a loopback port of its own, and reports what each
handler did, one line per event. The handlers use the servicer context
as grpcio documents it and never judge; logs go to stderr."""

import json
import platform
import threading
import time
from concurrent import futures

import grpc

import bank
from protocol import MAX_LINE, ProtocolError, fields, want

PROTOCOL = "rpcbench-server/1"
SERVICE = "rpcbench.bank.v1.Bank"
OPENING_BALANCE = 1000
STOP_GRACE = 2.0  # seconds shutdown lets handlers finish before grpcio cancels them

# MAX_WORKERS bounds the handlers running at once: grpcio runs each
# handler on one executor thread for its whole life, sleep_ms and
# work_ms included, and an RPC beyond the bound waits in the executor's queue
# (grpc.server's maximum_concurrent_rpcs is None by default, so none is
# refused) and its handler starts late. 16 is more than the few calls a
# scenario is meant to have in flight at once (no server scenario
# exists yet to count them), so that no start is late for want of a
# thread, and still few threads on a shared 2-core machine; the waits
# block on events, they do not spin. A scenario with more than 16
# handlers asleep at once would see later starts, from this bound, not
# from grpcio's defaults.
MAX_WORKERS = 16


class Ledger:
    """Ledger is the bank every handler shares: account -> balance, an
    account not seen before holding OPENING_BALANCE."""

    def __init__(self):
        self.mu = threading.Lock()  # guards balances, debits
        self.balances = {}
        self.debits = {}  # account -> debits executed

    def get(self, account, executed):
        """get returns the account's balance and debits executed, calling
        executed(balance) first with the lock held: the protocol has exec
        lines written in the order the ledger applied them."""
        with self.mu:
            b, n = self.balances.get(account, OPENING_BALANCE), self.debits.get(account, 0)
            executed(b)
            return b, n

    def debit(self, account, amount, executed):
        """debit takes amount from the account, which may go negative, and
        returns its balance and debits executed after it, calling
        executed(balance) as get does."""
        with self.mu:
            b = self.balances.get(account, OPENING_BALANCE) - amount
            n = self.debits.get(account, 0) + 1
            self.balances[account], self.debits[account] = b, n
            executed(b)
            return b, n


def ctx_state(context):
    """ctx_state is the servicer context's state as the protocol names it.
    grpcio's context says only whether the RPC is active; it has no
    "why not". An inactive RPC whose deadline has passed
    (time_remaining() is clamped at 0 by grpcio, so <= 0) is
    deadline_exceeded, any other inactive one cancelled: a client's
    cancel, a connection's loss, the server's stop. A cancel that comes
    after the deadline reads as deadline_exceeded. A client that ends
    the stream at its own deadline, as grpcio's client does, may end the
    RPC before the server's deadline, which counts from the request's
    arrival: cancelled, and rightly so, since that is what ended it."""
    if context.is_active():
        return "active"
    if context.time_remaining() <= 0:
        return "deadline_exceeded"
    return "cancelled"


def deadline_ms(context):
    """deadline_ms is what the context says is left of the deadline, in
    milliseconds, or None for no deadline. grpcio 1.51.1's
    time_remaining() never returns None: without a grpc-timeout it is
    the distance to C-core's infinite future, about 9.2e18 s, which is
    reported as no deadline."""
    left = context.time_remaining()
    if left is None or left > NO_DEADLINE_S:
        return None
    return round(left * 1000, 3)


# NO_DEADLINE_S: a time_remaining() beyond it (seconds; 100 years) is
# C-core's infinite deadline, not one a client sent. grpc-timeout's
# largest value, 99999999 hours, is about 11400 years, so a client could
# send a longer one, but no harness scenario does.
NO_DEADLINE_S = 100 * 365 * 86400.0


class Handlers:
    """Handlers are the Bank's three methods, writing their events
    through send before they return."""

    def __init__(self, send, ledger):
        self.send, self.ledger = send, ledger

    def event(self, typ, call, method, **kw):
        msg = {"type": typ, "call": call, "method": method}
        msg.update(kw)
        self.send(msg)

    def begin(self, method, context):
        call = ""
        for k, v in context.invocation_metadata() or ():
            if k == "x-rpcbench-call":
                call = v if isinstance(v, str) else v.decode("utf-8", "replace")
                break
        dl = deadline_ms(context)
        self.event("start", call, method, deadline_ms=dl)
        return call, dl

    def end(self, call, method, context, executed):
        """end writes the end event of a handler that answers OK."""
        self.event("end", call, method, executed=executed, ctx=ctx_state(context), code="OK")

    def fail(self, call, method, context, code, details):
        """fail writes the end event of an unexecuted handler and ends the
        RPC with code by context.abort, which raises: fail never returns.
        abort is answered with trailers only, while set_code and a
        returned reply would have grpcio send the reply's message before
        the error trailers (_server._status sends whatever response the
        handler returned)."""
        self.event("end", call, method, executed=False, ctx=ctx_state(context), code=code.name)
        context.abort(code, details)

    def slept(self, req, context):
        """slept waits sleep_ms, or until grpcio ends the RPC, and says
        whether the RPC ended first."""
        if req["sleep_ms"] <= 0:
            return False
        ended = threading.Event()
        if not context.add_callback(ended.set):
            return True  # grpcio has already terminated the RPC
        return ended.wait(req["sleep_ms"] / 1000)

    def account(self, method, req, context):
        call, dl = self.begin(method, context)
        if self.slept(req, context):
            state = ctx_state(context)
            code = grpc.StatusCode.DEADLINE_EXCEEDED if state == "deadline_exceeded" else grpc.StatusCode.CANCELLED
            return self.fail(call, method, context, code, f"the RPC ended during sleep_ms: {state}")
        if req["work_ms"] > 0:
            # Blind to the context, as a CPU-bound step or a call that
            # takes no context is: whatever grpcio does to the RPC
            # meanwhile, the handler executes after it.
            time.sleep(req["work_ms"] / 1000)
        if method == "Debit":
            if req["amount"] <= 0:
                return self.fail(call, method, context, grpc.StatusCode.INVALID_ARGUMENT,
                                 f"amount {req['amount']} is not positive")
            amount = req["amount"]
        else:
            amount = 0

        def executed(balance):
            self.event("exec", call, method, account=req["account"], amount=amount, balance=balance)

        if method == "Debit":
            balance, n = self.ledger.debit(req["account"], amount, executed)
        else:
            balance, n = self.ledger.get(req["account"], executed)
        self.end(call, method, context, True)
        return {"account": req["account"], "balance": balance, "exec": n, "replayed": False,
                "budget_ms": 0 if dl is None else int(dl)}

    def get(self, req, context):
        return self.account("Get", req, context)

    def debit(self, req, context):
        return self.account("Debit", req, context)

    def echo(self, req, context):
        call, _ = self.begin("Echo", context)
        self.end(call, "Echo", context, False)
        return {"payload": req["payload"]}

    def generic_handler(self):
        def unary(behavior, req_msg, resp_msg):
            return grpc.unary_unary_rpc_method_handler(
                behavior,
                request_deserializer=lambda b: bank.decode(req_msg, b),
                response_serializer=lambda r: bank.encode(resp_msg, r))
        return grpc.method_handlers_generic_handler(SERVICE, {
            "Get": unary(self.get, "GetRequest", "AccountReply"),
            "Debit": unary(self.debit, "DebitRequest", "AccountReply"),
            "Echo": unary(self.echo, "EchoRequest", "EchoReply"),
        })


class Server:
    """Server is one serve session: the harness's lines in, the serving
    line and handler events out."""

    def __init__(self, out, log):
        self.out, self.log = out, log
        self.out_lock = threading.Lock()  # guards writes to out
        self.server = None
        self.executor = None

    def send(self, msg):
        line = json.dumps(msg, separators=(",", ":")) + "\n"
        with self.out_lock:
            self.out.write(line)
            self.out.flush()

    def fatal(self, text):
        self.log(f"fatal: {text}")
        self.send({"type": "fatal", "text": text})
        return 2

    def start(self):
        """start binds, starts and returns the address grpcio listens on."""
        self.executor = futures.ThreadPoolExecutor(max_workers=MAX_WORKERS)
        self.server = grpc.server(self.executor)
        self.server.add_generic_rpc_handlers((Handlers(self.send, Ledger()).generic_handler(),))
        port = self.server.add_insecure_port("127.0.0.1:0")
        if not port:
            raise RuntimeError("grpcio could not bind 127.0.0.1:0")
        self.server.start()
        return f"127.0.0.1:{port}"

    def stop(self, grace):
        """stop stops the server, grace seconds for the RPCs in flight and
        then cancelled, and waits for every handler to have returned, so
        that their end lines are written before stop returns: grpcio's
        stop event fires once its calls are done, and a handler that was
        cancelled may still be on its way out."""
        if self.server is None:
            return
        self.server.stop(grace).wait()
        self.executor.shutdown(wait=True)
        self.server = None

    def run(self, stdin):
        try:
            return self.serve(stdin)
        finally:
            self.stop(0)

    def serve(self, stdin):
        inited = stopped = False
        n = 0
        while True:
            line = stdin.readline(MAX_LINE + 2)
            if not line:
                break
            n += 1
            if line.endswith(b"\n"):
                line = line[:-1]
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
            if stopped:
                return self.fatal(f"line {n}: {typ} after shutdown")
            if not inited and typ != "init":
                return self.fatal(f"line {n}: {typ} before init")
            if typ == "init":
                if inited:
                    return self.fatal(f"line {n}: bad init: a second init")
                try:
                    w = fields(obj, {"protocol": want("string")}, {"scenario": want("string")})
                except ProtocolError as err:
                    return self.fatal(f"line {n}: bad init: {err}")
                if w["protocol"] != PROTOCOL:
                    return self.fatal(f"line {n}: bad init: protocol {w['protocol']!r}, this adapter speaks {PROTOCOL}")
                inited = True
                self.log(f"init: scenario {w.get('scenario', '')!r}")
                try:
                    addr = self.start()
                except (RuntimeError, grpc.RpcError) as err:
                    return self.fatal(f"cannot serve: {err}")
                self.log(f"serving on {addr}, {MAX_WORKERS} workers")
                self.send({"type": "serving", "protocol": PROTOCOL, "stack": "grpcio", "version": grpc.__version__,
                           "runtime": f"python {platform.python_version()}", "addr": addr})
            elif typ == "shutdown":
                try:
                    fields(obj, {})
                except ProtocolError as err:
                    return self.fatal(f"line {n}: bad shutdown: {err}")
                self.stop(STOP_GRACE)
                stopped = True
                self.send({"type": "shutdown_ok"})
            else:
                return self.fatal(f"line {n}: unknown type {typ!r}")
        self.stop(STOP_GRACE)
        return 0
