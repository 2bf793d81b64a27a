#!/usr/bin/env bash
# Builds rpcbench, rpcserver and the grpc-go and connect-go adapters into
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
