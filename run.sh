#!/usr/bin/env bash
# Builds rpcbench, rpcserver and the client adapters into bin/ and runs
# every group: the scenarios of the evidence group into evidence/, then
# robustness, durability, chaos, governance, network, grpc and deploy into
# evidence/GROUP. Extra
# arguments go to each `rpcbench all`, e.g. ./run.sh --color never.
# A selection (--run or --skip) is one run over every group instead,
# writing no evidence unless --evidence DIR is given: part of a group
# must not replace its evidence, and a name matches in one group only.
# Scenarios whose prerequisite is missing here (PostgreSQL; root and
# iproute2 for network; a client adapter that could not be built or started) print SKIP with the reason; it exits 0 unless a
# scenario failed.
set -euo pipefail
cd "$(dirname "$0")"
./build.sh bin
for arg in "$@"; do
  case "$arg" in
    --run | --run=* | --skip | --skip=*)
      exec bin/rpcbench all --group all --evidence "" "$@"
      ;;
  esac
done
status=0
for group in evidence robustness durability chaos governance network grpc deploy; do
  bin/rpcbench all --group "$group" "$@" || status=$?
done
exit "$status"
