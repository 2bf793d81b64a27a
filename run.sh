#!/usr/bin/env bash
# Builds rpcbench and rpcserver into bin/ and runs every group: the 26
# scenarios of the evidence group into evidence/, then robustness,
# durability, chaos and governance into evidence/GROUP. Extra arguments go to each
# `rpcbench all`, e.g. ./run.sh --color never
set -euo pipefail
cd "$(dirname "$0")"
./build.sh bin
status=0
for group in evidence robustness durability chaos governance; do
  bin/rpcbench all --group "$group" "$@" || status=$?
done
exit "$status"
