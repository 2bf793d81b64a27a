#!/usr/bin/env bash
# Builds rpcbench, rpcserver and the client adapters into bin/ (build.sh,
# which says what it builds) and runs every group, one `rpcbench all
# --group G` after the other, each announced as "== group 4 of 9:
# durability": the scenarios of the evidence group into evidence/, then
# robustness, hostile, durability, chaos, governance, network, grpc and deploy into
# evidence/GROUP. Extra arguments go to each `rpcbench all`, e.g.
# ./run.sh --color never. It ends with one line on stdout summing the
# groups' summary lines, "== total over 9 groups: N passed, M failed, ...",
# each read from the output.txt its group's run has just written (in the
# evidence directory, or in the .rpcbench-run-* directory a run that
# skipped scenarios or was interrupted leaves there); a group whose run
# left none is named and not counted.
#
# A selection (--run, --skip, --stack or --config) is one run over every
# group instead,
# writing no evidence unless --evidence DIR is given: part of a group
# must not replace its evidence, and a name matches in one group only.
#
# Scenarios whose prerequisite is missing here (PostgreSQL; root and
# iproute2 for network; a client adapter that could not be built or
# started) print SKIP with the reason; it exits 0 unless a group failed,
# and then with the status of the last group that did. A usage error
# (status 2: a mistyped flag) stops the run at the first group.
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

groups=(evidence robustness hostile durability chaos governance network grpc proxy deploy)

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
evidence_given= evidence_arg= prev=
for arg in "$@"; do
  case "$arg" in
    --run | --run=* | --skip | --skip=* | --stack | --stack=* | --config | --config=*) selection=1 ;;
    --evidence=*) evidence_given=1 evidence_arg=${arg#--evidence=} ;;
  esac
  if [ "$prev" = --evidence ]; then
    evidence_given=1 evidence_arg=$arg
  fi
  prev=$arg
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

# evidence_dir GROUP: where `rpcbench all --group GROUP "$@"` writes; ""
# for nowhere.
evidence_dir() {
  if [ -n "$evidence_given" ]; then
    echo "$evidence_arg"
  elif [ "$1" = evidence ]; then
    echo evidence
  else
    echo "evidence/$1"
  fi
}

# state DIR: what of DIR tells a run's output from an earlier one's: the
# inode of its output.txt (a run that completes renames a new one into
# place) and the .rpcbench-run-* directories there.
state() {
  if [ -z "$1" ]; then
    return
  fi
  stat -c 'inode %i' "$1/output.txt" 2>/dev/null || echo "inode none"
  local r
  for r in "$1"/.rpcbench-run-*; do
    if [ -d "$r" ]; then echo "$r"; fi
  done
}

# summary_of DIR BEFORE: the last line of the output.txt a run has just
# left in DIR, BEFORE being DIR's state before it ran; fails if it left
# none (it stopped before its first scenario, or wrote no evidence).
summary_of() {
  local dir=$1 before=$2 r
  if [ -z "$dir" ]; then
    return 1
  fi
  # A run that did not complete keeps its output in a .rpcbench-run-*
  # directory and removes earlier ones; a new one is this run's.
  for r in "$dir"/.rpcbench-run-*; do
    if [ -f "$r/output.txt" ] && ! grep -qxF -- "$r" <<<"$before"; then
      tail -n 1 "$r/output.txt"
      return
    fi
  done
  if [ -f "$dir/output.txt" ] && [ "$(state "$dir" | head -n 1)" != "$(head -n 1 <<<"$before")" ]; then
    tail -n 1 "$dir/output.txt"
    return
  fi
  return 1
}

# The totals, by label as a summary line has them ("error" counted under
# "errors", "finding" under "findings"), and the labels in the order met.
declare -A sum=()
labels=()
summary_line='^[0-9]+ passed, [0-9]+ failed(, [0-9]+ [a-z][a-z/ -]*)*$'

# add_summary LINE: adds the counts of an rpcbench summary line, "N
# passed, M failed" and then any ", K label" parts, to the totals; fails
# leaving them as they were if LINE is not one.
add_summary() {
  if ! [[ $1 =~ $summary_line ]]; then
    return 1
  fi
  local parts part n label
  IFS=, read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    part=${part# }
    n=${part%% *} label=${part#* }
    case "$label" in
      error) label=errors ;;
      finding) label=findings ;;
    esac
    if [ -z "${sum[$label]+set}" ]; then
      labels+=("$label")
    fi
    sum[$label]=$((${sum[$label]:-0} + 10#$n))
  done
}

# total: the totals as rpcbench writes a summary line: passed and failed
# always, the others when not zero, in rpcbench's order and then any
# label it does not have yet.
total() {
  local out="${sum[passed]:-0} passed, ${sum[failed]:-0} failed" label n seen=" passed failed "
  for label in errors interrupted skipped findings n/a "${labels[@]}"; do
    case "$seen" in *" $label "*) continue ;; esac
    seen+="$label "
    n=${sum[$label]:-0}
    if [ "$n" = 0 ]; then
      continue
    fi
    case "$label:$n" in
      errors:1) out+=", 1 error" ;;
      findings:1) out+=", 1 finding" ;;
      *) out+=", $n $label" ;;
    esac
  done
  echo "$out"
}

status=0
counted=0
for i in "${!groups[@]}"; do
  stop_if_caught
  group=${groups[$i]}
  echo "== group $((i + 1)) of ${#groups[@]}: $group" >&2
  dir=$(evidence_dir "$group")
  before=$(state "$dir")
  code=0
  bin/rpcbench all --group "$group" "$@" 9>&- || code=$?
  if line=$(summary_of "$dir" "$before") && add_summary "$line"; then
    counted=$((counted + 1))
  elif [ -z "$dir" ]; then
    echo "run.sh: group $group wrote no evidence (--evidence \"\"): not counted in the total" >&2
  else
    echo "run.sh: group $group left no summary line in $dir: not counted in the total" >&2
  fi
  if [ "$code" = 2 ]; then
    # A usage error (a mistyped flag) is the same in every group: said
    # once, it ends the run.
    echo "run.sh: group $group refused its arguments (status 2): stopping" >&2
    exit 2
  fi
  if [ -n "$caught" ] || [ "$code" -gt 128 ]; then
    echo "run.sh: stopped in group $((i + 1)) of ${#groups[@]} ($group)${caught:+ by SIG$caught}" >&2
    echo "== total over $counted of ${#groups[@]} groups: $(total)"
    stop_if_caught
    exit "$code"
  fi
  if [ "$code" != 0 ]; then
    status=$code
  fi
done
if [ "$counted" = "${#groups[@]}" ]; then
  echo "== total over $counted groups: $(total)"
else
  echo "== total over $counted of ${#groups[@]} groups: $(total)"
fi
exit "$status"
