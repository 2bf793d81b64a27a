#!/usr/bin/env bash
# Builds rpcbench, rpcserver and the client adapters (grpc-go, connect-go;
# wrappers for grpc-js and grpcio) into
# DIR (default bin/). It stamps the
# commit and whether the tree has local changes, evidence/ left out, into
# the binaries, for env.txt: a run's own evidence files must not mark the
# next build dirty.
set -euo pipefail
cd "$(dirname "$0")"
out=${1:-bin}
commit=$(git rev-parse HEAD 2>/dev/null || echo "unknown (no git)")
dirty=false
if [ -n "$(git status --porcelain -- . ':(exclude)evidence' 2>/dev/null)" ]; then
  dirty=true
fi
pkg=github.com/rpcbench/rpcbench/internal/report
go build -ldflags "-X '$pkg.stampedCommit=$commit' -X $pkg.stampedDirty=$dirty" -o "$out/" ./cmd/...
# The Go adapters are modules of their own (adapters/*/go.mod), so that
# the main module never links grpc-go or connect-go: ./cmd/... leaves
# them out. The grpc-js adapter needs no build: adapters/grpcjs/adapter-grpcjs
# runs it on node after `npm ci` there.
mkdir -p "$out"
abs=$(cd "$out" && pwd)
(cd adapters/grpcgo && go build -o "$abs/adapter-grpcgo" .)
(cd adapters/connectgo && go build -o "$abs/adapter-connectgo" .)
# The grpc-js and grpcio adapters are scripts run by node and Debian's
# /usr/bin/python3: bin/ gets a wrapper that runs each from this tree.
# grpc-js's packages come from its committed lockfile (npm ci) when npm
# is here and they are not yet installed; without node, npm or grpcio
# the wrapper is still written, and rpcbench says what is missing when
# it starts the adapter.
repo=$(pwd)
if [ ! -d adapters/grpcjs/node_modules/@grpc/grpc-js ] && command -v npm >/dev/null; then
  (cd adapters/grpcjs && npm ci --no-audit --no-fund --silent)
fi
for a in grpcjs grpcio; do
  if [ -x "adapters/$a/adapter-$a" ]; then
    printf '#!/bin/sh\nexec %s "$@"\n' "'$repo/adapters/$a/adapter-$a'" > "$abs/adapter-$a"
    chmod +x "$abs/adapter-$a"
  fi
done
