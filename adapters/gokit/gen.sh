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
(cd / && GOBIN="$GOBIN/legacy" GOFLAGS=-mod=mod go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.3.0)
mod=github.com/rpcbench/rpcbench/adapters/gokit
PATH="$GOBIN:$PATH" protoc -I ../../proto \
  --go_out="$out" --go_opt=module=$mod \
  --go-grpc_out="$out" --go-grpc_opt=module=$mod \
  --connect-go_out="$out" --connect-go_opt=module=$mod \
  rpcbench/bank/v1/bank.proto
legacy=$(mktemp -d)
trap 'rm -rf "$legacy"' EXIT
PATH="$GOBIN/legacy:$PATH" protoc -I ../../proto \
  --go-grpc_out="$legacy" --go-grpc_opt=module=$mod \
  rpcbench/bank/v1/bank.proto
# tagged PATH FILE TAG: FILE behind the build constraint TAG, into PATH.
tagged() { { printf '//go:build %s\n\n' "$3"; cat "$2"; } > "$1.tmp" && mv "$1.tmp" "$1"; }
tagged "$out/bankpb/bank_grpc.pb.go" "$out/bankpb/bank_grpc.pb.go" '!grpcgo_pre164'
tagged "$out/bankpb/bank_grpc_pre164.pb.go" "$legacy/bankpb/bank_grpc.pb.go" grpcgo_pre164
