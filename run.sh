#!/usr/bin/env bash
# Builds rpcbench and rpcserver into bin/ and runs every group: the 26
# scenarios of the evidence group into evidence/, then robustness,
# durability, chaos, governance and network into evidence/GROUP. Extra
# arguments go to each `rpcbench all`, e.g. ./run.sh --color never.
# Scenarios whose prerequisite is missing here (PostgreSQL; root and
# iproute2 for network) print SKIP with the reason; it exits 0 unless a
# scenario failed.
set -euo pipefail
cd "$(dirname "$0")"
./build.sh bin
status=0
for group in evidence robustness durability chaos governance network; do
  bin/rpcbench all --group "$group" "$@" || status=$?
done
exit "$status"
