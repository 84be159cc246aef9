#!/usr/bin/env bash
# Records the golden suite (cmd/horad/testdata/golden/script.txt) from a real
# Slurm 22.05 into cmd/horad/testdata/golden/slurm.txt. Needs root and the
# oracle of the team's shared tools (slurm-oracle.sh --accounting, so that
# sacct answers); reuses a Slurm that already answers and never stops it.
# The replay against horad is TestGolden in `make test` (docs/compat.md).
# Usage: scripts/record-golden.sh [path/to/slurm-oracle.sh]
set -euo pipefail
cd "$(dirname "$0")/.."
oracle=${1:-../shared/tools/slurm-oracle.sh}
[ -x "$oracle" ] || { echo "record-golden: no Slurm oracle at $oracle (give its path)" >&2; exit 1; }
if ! sinfo >/dev/null 2>&1; then
	"$oracle" start --accounting
fi
if ! sacct -n -X -j 1 >/dev/null 2>&1; then
	echo "record-golden: sacct does not answer; start the oracle with --accounting" >&2
	exit 1
fi
go test -count=1 -run '^TestGoldenRecord$' -v ./cmd/horad/ -args -golden.record | grep -E '^(=== RUN|--- |ok|FAIL|\s+golden)' || true
git diff --stat -- cmd/horad/testdata/golden/slurm.txt
