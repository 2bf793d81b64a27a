#!/usr/bin/env bash
# goinstall.sh checks what docs/judge-your-stack.md and action.yml tell a
# user to do: `go install github.com/rpcbench/rpcbench/cmd/...@latest`
# gives a working rpcbench and rpcserver with nothing else from the
# repository. It serves this commit as the module's latest version from a
# file proxy (GOPROXY=file://, the module zip made from `git archive`
# less the nested modules, as the module proxy would serve it), installs
# into an empty GOPATH and GOBIN, and judges the walkthrough's adapter
# from an empty directory. Needs git, python3, Go, the module proxy for
# the dependencies and Debian's python3-grpcio.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
mod=github.com/rpcbench/rpcbench
ts=$(git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S)
ver="v0.0.0-$ts-$(git rev-parse --short=12 HEAD)"
proxy="$work/proxy/$mod/@v"
mkdir -p "$proxy" "$work/src"
git archive HEAD | tar -x -C "$work/src"
python3 - "$work/src" "$proxy/$ver.zip" "$mod@$ver" <<'PY'
import os, sys, zipfile
src, out, prefix = sys.argv[1:]
nested = {d for d, _, fs in os.walk(src) if "go.mod" in fs and d != src}
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for d, dirs, fs in os.walk(src):
        if any(d == n or d.startswith(n + os.sep) for n in nested):
            continue
        for f in fs:
            p = os.path.join(d, f)
            if os.path.islink(p):
                continue
            z.write(p, prefix + "/" + os.path.relpath(p, src))
PY
cp go.mod "$proxy/$ver.mod"
printf '{"Version":"%s","Time":"%s"}\n' "$ver" "$(git log -1 --format=%cI)" > "$proxy/$ver.info"
echo "$ver" > "$proxy/list"
cp "$proxy/$ver.info" "$work/proxy/$mod/@latest"

gopath="$work/gopath"
echo "== go install $mod/cmd/...@latest (this commit as $ver) into an empty GOPATH"
GOPATH="$gopath" GOBIN="$gopath/bin" GOFLAGS=-modcacherw GONOSUMDB=$mod GONOSUMCHECK=1 \
  GOPROXY="file://$work/proxy,${GOPROXY:-https://proxy.golang.org}" \
  go install "$mod/cmd/...@latest"
ls "$gopath/bin"

echo "== rpcbench judge on the walkthrough's adapter, from an empty directory"
mkdir "$work/user"
cd "$work/user"
python3 - "$repo/docs/judge-your-stack.md" adapter.py <<'PY'
import re, sys
doc = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(re.findall(r"```python\n(.*?)```", doc, re.S)[0])
PY
"$gopath/bin/rpcbench" version
set +e
"$gopath/bin/rpcbench" judge --client --run '^grpc_(close|unavailable)_after_exec_' --config default --config retry \
  --write-expect pins.txt --color never -- /usr/bin/python3 adapter.py
first=$?
"$gopath/bin/rpcbench" judge --client --run '^grpc_(close|unavailable)_after_exec_' --config default --config retry \
  --expect pins.txt --summary - --color never -- /usr/bin/python3 adapter.py
second=$?
set -e
cat pins.txt
echo "first run exited $first (unpinned violations), the second $second with its pins"
[ "$first" = 1 ] && [ "$second" = 0 ]
