#!/usr/bin/env bash
# Runs the comparison benchmark: builds rpcload, benchpeer and rpcserver
# into bench/bin/, then runs every system and prints the markdown table on
# stdout (progress on stderr). Extra arguments go to rpcload, e.g.
#   ./run.sh -systems rpcbench,raw -g 64 -json results.json
set -euo pipefail
cd "$(dirname "$0")"
go build -o bin/ ./cmd/rpcload ./cmd/benchpeer github.com/rpcbench/rpcbench/cmd/rpcserver
exec bin/rpcload -rpcserver bin/rpcserver -benchpeer bin/benchpeer "$@"
