#!/usr/bin/env bash
# Builds rpcbench and rpcserver into bin/ and runs the evidence suite,
# writing evidence/ (output.txt, env.txt, logs/). Extra arguments go to
# `rpcbench all`, e.g. ./run.sh --json evidence/results.json
set -euo pipefail
cd "$(dirname "$0")"
./build.sh bin
exec bin/rpcbench all "$@"
