#!/usr/bin/env python3
"""A client of a gRPC service, in miniature, for docs/judge-your-service.md.

It debits an account of rpcbench's Bank (bin/rpcserver -grpc stands in
for your service) through grpcio, one call at a time, each with a
deadline, and with --retry under the retry policy many services
configure: up to four attempts on UNAVAILABLE; with --key each debit
carries an idempotency-key of its own, which rpcserver dedupes by. The
requests are encoded by hand so that it needs nothing but grpcio
(python3-grpcio).

    python3 examples/debit.py --addr 127.0.0.1:50052 --account acct-X --calls 3 --retry

--addr defaults to $RPCBENCH_PROXY_ADDR, where rpcbench proxy listens
when it runs this as its workload. It prints each call's status and
exits 0 when every call ended OK, 1 otherwise.
"""
import argparse
import json
import os
import sys
import uuid

import grpc

RETRY_POLICY = {
    "methodConfig": [{
        "name": [{"service": "rpcbench.bank.v1.Bank"}],
        "retryPolicy": {
            "maxAttempts": 4,
            "initialBackoff": "0.01s",
            "maxBackoff": "0.1s",
            "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE"],
        },
    }]
}


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def debit_request(account, amount):
    """rpcbench.bank.v1.DebitRequest: account = 1 (string), amount = 2."""
    a = account.encode()
    return b"\x0a" + varint(len(a)) + a + b"\x10" + varint(amount)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--addr", default=os.environ.get("RPCBENCH_PROXY_ADDR"), help="the service, HOST:PORT")
    p.add_argument("--account", default="acct-X")
    p.add_argument("--amount", type=int, default=10)
    p.add_argument("--calls", type=int, default=3)
    p.add_argument("--deadline", type=float, default=2.0, help="each call's deadline, in seconds")
    p.add_argument("--retry", action="store_true", help="configure the retry policy")
    p.add_argument("--key", action="store_true", help="send each debit with an idempotency-key of its own")
    args = p.parse_args()
    if not args.addr:
        p.error("give --addr, or run me under rpcbench proxy (RPCBENCH_PROXY_ADDR)")
    options = [("grpc.enable_retries", 1 if args.retry else 0)]
    if args.retry:
        options.append(("grpc.service_config", json.dumps(RETRY_POLICY)))
    failed = 0
    with grpc.insecure_channel(args.addr, options=options) as channel:
        debit = channel.unary_unary("/rpcbench.bank.v1.Bank/Debit")
        for i in range(args.calls):
            metadata = [("idempotency-key", uuid.uuid4().hex)] if args.key else None
            try:
                debit(debit_request(args.account, args.amount), timeout=args.deadline, metadata=metadata)
                print(f"debit {i + 1}: OK")
            except grpc.RpcError as e:
                failed += 1
                print(f"debit {i + 1}: {e.code().name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
