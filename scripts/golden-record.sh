#!/usr/bin/env bash
# Records the golden files of cmd/horad TestGoldenAgainstSlurm from the real
# Slurm 22.05 that ../shared/tools/slurm-oracle.sh starts on this machine:
# each line of cmd/horad/testdata/golden/lines.txt is run by sh -c with
# $LAST/$PREV (the last job ids printed alone), and its exit status, stdout
# and stderr are written raw to NAME.golden. The test normalises ids, times
# and names on both sides. Usage: scripts/golden-record.sh [name-regexp]
set -eu
cd "$(dirname "$0")/.."
dir=cmd/horad/testdata/golden
only=${1:-.}
command -v sinfo >/dev/null && sinfo >/dev/null 2>&1 || { echo "no Slurm answers: run ../shared/tools/slurm-oracle.sh first" >&2; exit 1; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
LAST=""; PREV=""
while IFS=$'\t' read -r name cmd; do
  case "$name" in ''|'#'*) continue ;; esac
  file=$dir/${name#!}.golden
  set +e
  (cd "$work" && LAST=$LAST PREV=$PREV TZ=UTC sh -c "$cmd") >"$work/out" 2>"$work/err"
  code=$?
  set -e
  if grep -qxE '[0-9]+' "$work/out"; then PREV=$LAST; LAST=$(cat "$work/out"); fi
  echo "$name" | grep -qE "$only" || continue
  { echo "\$ $cmd"; echo "exit $code"; echo "--- stdout"; cat "$work/out"; echo "--- stderr"; cat "$work/err"; } >"$file"
  echo "recorded $file"
done <"$dir/lines.txt"
