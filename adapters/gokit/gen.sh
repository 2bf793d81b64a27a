#!/usr/bin/env bash
# Regenerates bankpb/ (the messages and grpc-go's client and server) and
# bankpb/bankpbconnect/ (connect-go's client and handler) from
# proto/rpcbench/bank/v1/bank.proto, into OUT (default: this directory,
# so that bankpb/ is replaced). It needs protoc (Debian: apt-get install
# protobuf-compiler, 3.21.12) and the module proxy: the three plugins are
# installed at pinned versions into .bin/, which is not committed.
set -euo pipefail
cd "$(dirname "$0")"
out=$(realpath "${1:-.}")
command -v protoc >/dev/null || { echo "gen.sh: protoc not found; apt-get install protobuf-compiler (3.21.12)" >&2; exit 1; }
export GOBIN="$PWD/.bin"
# Outside this module, so that the plugins' own dependencies stay out of go.mod.
(cd / && GOFLAGS=-mod=mod go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12)
(cd / && GOFLAGS=-mod=mod go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2)
(cd / && GOFLAGS=-mod=mod go install connectrpc.com/connect/cmd/protoc-gen-connect-go@v1.21.1)
mod=github.com/rpcbench/rpcbench/adapters/gokit
PATH="$GOBIN:$PATH" protoc -I ../../proto \
  --go_out="$out" --go_opt=module=$mod \
  --go-grpc_out="$out" --go-grpc_opt=module=$mod \
  --connect-go_out="$out" --connect-go_opt=module=$mod \
  rpcbench/bank/v1/bank.proto
