#!/usr/bin/env bash
# Builds rpcbench, rpcserver and the client adapters into bin/ (build.sh,
# which says what it builds) and runs every group, one `rpcbench all
# --group G` after the other: the scenarios of the evidence group into
# evidence/, then robustness, durability, chaos, governance, network, grpc
# and deploy into evidence/GROUP. Extra arguments go to each `rpcbench
# all`, e.g. ./run.sh --color never.
#
# A selection (--run or --skip) is one run over every group instead,
# writing no evidence unless --evidence DIR is given: part of a group
# must not replace its evidence, and a name matches in one group only.
#
# Scenarios whose prerequisite is missing here (PostgreSQL; root and
# iproute2 for network; a client adapter that could not be built or
# started) print SKIP with the reason; it exits 0 unless a group failed,
# and then with the status of the last group that did.
#
# One Ctrl-C stops the run: the running rpcbench gets it from the
# terminal as well, stops its scenario and cleans up, and run.sh then
# exits 130 without starting the next group (143 for SIGTERM; and a group
# that exits on a signal of its own, 130, 141 or 143, ends the run with
# its status). A signal sent to run.sh alone, not to its process group,
# takes effect when the running group ends: forwarding it would be
# rpcbench's second signal, which kills it at once.
#
# One run at a time per clone: both would build into one bin/ and write
# one evidence/. The run holds a lock (flock) on the clone's git
# directory's rpcbench-run.lock, or .run.lock outside git, from before
# the build to its end; a second run is refused before it builds
# anything, naming the first's pid, and exits 2.
set -euo pipefail
cd "$(dirname "$0")"

groups=(evidence robustness durability chaos governance network grpc deploy)

lock=.run.lock
if top=$(git rev-parse --show-toplevel 2>/dev/null) && [ "$top" = "$(pwd -P)" ]; then
  lock=$(git rev-parse --absolute-git-dir)/rpcbench-run.lock
fi
if command -v flock >/dev/null; then
  # Opened without truncating: the pid in it is the holder's.
  exec 9<>"$lock"
  if ! flock -n 9; then
    holder=$(cat "$lock" 2>/dev/null || true)
    echo "run.sh: another ./run.sh (pid ${holder:-unknown}) is running in this clone and holds $lock; wait for it to end, or stop it" >&2
    exit 2
  fi
  echo "$$" >"$lock"
else
  echo "run.sh: no flock here (util-linux): running without the lock that keeps a second ./run.sh out of this clone" >&2
fi

# A signal is acted on once the foreground child has ended: the child got
# the terminal's signal too and stops on its own.
caught=
trap 'caught=INT' INT
trap 'caught=TERM' TERM
stop_if_caught() {
  case "$caught" in
    INT) exit 130 ;;
    TERM) exit 143 ;;
  esac
}

selection=
for arg in "$@"; do
  case "$arg" in
    --run | --run=* | --skip | --skip=*) selection=1 ;;
  esac
done

# The children do not get the lock's descriptor (9>&-): a process that
# outlived run.sh must not keep the next run out.
build=0
./build.sh bin 9>&- || build=$?
stop_if_caught
if [ "$build" != 0 ]; then
  exit "$build"
fi

if [ -n "$selection" ]; then
  status=0
  bin/rpcbench all --group all --evidence "" "$@" 9>&- || status=$?
  stop_if_caught
  exit "$status"
fi

status=0
for group in "${groups[@]}"; do
  stop_if_caught
  code=0
  bin/rpcbench all --group "$group" "$@" 9>&- || code=$?
  if [ -n "$caught" ] || [ "$code" -gt 128 ]; then
    echo "run.sh: stopped in group $group${caught:+ by SIG$caught}" >&2
    stop_if_caught
    exit "$code"
  fi
  if [ "$code" != 0 ]; then
    status=$code
  fi
done
exit "$status"
