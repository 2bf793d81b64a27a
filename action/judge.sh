#!/usr/bin/env bash
# judge.sh is the GitHub Action's step (action.yml at the repository's
# root): it turns the action's inputs, as INPUT_* variables, into one
# rpcbench judge command, with the Markdown summary going to
# $GITHUB_STEP_SUMMARY when it is set. Its exit status is rpcbench's.
# cmd/rpcbench's TestActionScript runs it as the action would.
set -euo pipefail
args=(judge --color never --evidence "${INPUT_EVIDENCE:-rpcbench-judge}")
if [ -n "${INPUT_CLIENT:-}" ]; then args+=("--client=$INPUT_CLIENT"); fi
if [ -n "${INPUT_SERVER:-}" ]; then args+=("--server=$INPUT_SERVER"); fi
while IFS= read -r c; do
  c=${c#"${c%%[![:space:]]*}"}
  c=${c%"${c##*[![:space:]]}"}
  if [ -n "$c" ]; then args+=(--config "$c"); fi
done <<< "${INPUT_CONFIGS:-}"
if [ -n "${INPUT_EXPECT:-}" ]; then args+=(--expect "$INPUT_EXPECT"); fi
if [ -n "${INPUT_RUN:-}" ]; then args+=(--run "$INPUT_RUN"); fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then args+=(--summary "$GITHUB_STEP_SUMMARY"); fi
echo "rpcbench ${args[*]}" >&2
exec "${RPCBENCH:-rpcbench}" "${args[@]}"
