#!/usr/bin/env bash
# Builds rpcbench, rpcserver, the client adapters (grpc-go, connect-go;
# wrappers for grpc-js and grpcio) and h2spec into DIR (default bin/), saying on
# stderr what it builds as each step starts ("build: adapter-grpcgo (go
# build in adapters/grpcgo)": on a cold cache a step takes minutes) and
# at the end how long each took. It stamps the commit and whether the
# tree has local changes, evidence/ left out, into the binaries, for
# env.txt: a run's own evidence files must not mark the next build dirty.
set -euo pipefail
cd "$(dirname "$0")"
out=${1:-bin}
commit=$(git rev-parse HEAD 2>/dev/null || echo "unknown (no git)")
dirty=false
if [ -n "$(git status --porcelain -- . ':(exclude)evidence' 2>/dev/null)" ]; then
  dirty=true
fi
pkg=github.com/rpcbench/rpcbench/internal/report

# now: the time in microseconds (whatever the locale's decimal point).
now() {
  local t=${EPOCHREALTIME:-$(date +%s).000000}
  echo "${t//[^0-9]/}"
}
# seconds US: US microseconds as seconds to the tenth, "12.3s".
seconds() { echo "$(($1 / 1000000)).$(($1 / 100000 % 10))s"; }

# step NAME: ends the step before it, timing it, and says on stderr that
# NAME is being built. Times are $EPOCHREALTIME's, in microseconds.
took=
current=
began=$(now)
started=$began
step() {
  lap
  current=$1
  echo "build: $1" >&2
}
# lap: adds the current step and how long it took to $took.
lap() {
  local t
  t=$(now)
  if [ -n "$current" ]; then
    took+="${took:+; }${current%% (*} $(seconds $((t - started)))"
  fi
  started=$t
}
step "rpcbench, rpcserver (go build ./cmd/...)"
go build -ldflags "-X '$pkg.stampedCommit=$commit' -X $pkg.stampedDirty=$dirty" -o "$out/" ./cmd/...
# The Go adapters are modules of their own (adapters/*/go.mod), so that
# the main module never links grpc-go or connect-go: ./cmd/... leaves
# them out; each reaches the kit they share, adapters/gokit, through a
# replace directive in its go.mod. The grpc-js adapter needs no build:
# adapters/grpcjs/adapter-grpcjs runs it on node after `npm ci` there.
mkdir -p "$out"
abs=$(cd "$out" && pwd)
step "adapter-grpcgo (go build in adapters/grpcgo)"
(cd adapters/grpcgo && go build -o "$abs/adapter-grpcgo" .)
step "adapter-connectgo (go build in adapters/connectgo)"
(cd adapters/connectgo && go build -o "$abs/adapter-connectgo" .)
# h2spec, the HTTP/2 conformance tool cmd/rpcserver's TestH2Spec runs
# against rpcserver -grpc, at the version tools/h2spec/go.mod pins (a
# module of its own, so the main module never depends on it).
step "h2spec (go build in tools/h2spec)"
(cd tools/h2spec && go build -o "$abs/h2spec" github.com/summerwind/h2spec/cmd/h2spec)
# The grpc-js and grpcio adapters are scripts run by node and Debian's
# /usr/bin/python3: bin/ gets a wrapper that runs each from this tree.
# grpc-js's packages come from its committed lockfile (npm ci) when npm
# is here and they are not yet installed; without node, npm or grpcio
# the wrapper is still written, and rpcbench says what is missing when
# it starts the adapter.
repo=$(pwd)
if [ ! -d adapters/grpcjs/node_modules/@grpc/grpc-js ] && command -v npm >/dev/null; then
  step "grpc-js packages (npm ci in adapters/grpcjs)"
  (cd adapters/grpcjs && npm ci --no-audit --no-fund --silent)
elif [ ! -d adapters/grpcjs/node_modules/@grpc/grpc-js ]; then
  echo "build: no npm here: grpc-js packages not installed (rpcbench says so when it starts adapter-grpcjs)" >&2
fi
step "wrappers adapter-grpcjs, adapter-grpcio (scripts run from adapters/)"
for a in grpcjs grpcio; do
  if [ -x "adapters/$a/adapter-$a" ]; then
    printf '#!/bin/sh\nexec %s "$@"\n' "'$repo/adapters/$a/adapter-$a'" > "$abs/adapter-$a"
    chmod +x "$abs/adapter-$a"
  fi
done
lap
echo "build: done in $(seconds $(($(now) - began))) into $out/ ($took)" >&2
