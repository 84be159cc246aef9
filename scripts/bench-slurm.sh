#!/usr/bin/env bash
# make bench-slurm: hora against Slurm 22.05 on this machine, side by side
# (issue 16 item 5). For each queue length (1,500 and 10,000 held jobs,
# filled beforehand in both), ROUNDS interleaved rounds of: SEQ sequential
# `sbatch --hold` processes (wall time per submission), then 16 concurrent
# submitters of PER jobs each (jobs/s); hora and Slurm alternate inside each
# round. Prints a markdown table of medians, with date, machine and load.
#
# Each round also runs the same loops with a Go hello-world in sbatch's
# place ("Go floor"): a Go program that does nothing, the floor the issue
# sets for a client's start. It bounds what any Go client can reach on the
# machine: where the floor's own rate is under twice Slurm's, no hora client
# can submit at twice Slurm's rate there (docs/benchmarks.md).
#
# The Slurm oracle (../shared/tools/slurm-oracle.sh beside the checkout, or
# $ORACLE) is started if `sinfo`
# does not answer, and stopped at the end only if this script started it.
# Only the jobs this script submitted (its job name) are cancelled.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ORACLE=${ORACLE:-$ROOT/../shared/tools/slurm-oracle.sh}
ROUNDS=${ROUNDS:-5} SEQ=${SEQ:-50} PER=${PER:-10}
QUEUES=${QUEUES:-"1500 10000"}
NAME=hbench$$
HBIN=${HBIN:-$ROOT/bin} # HBIN=<dir> measures another build (before/after)
TMP=$(mktemp -d /tmp/hora-bench-slurm.XXXXXX)
started_oracle=no
if ! sinfo >/dev/null 2>&1; then
  "$ORACLE" start >/dev/null
  started_oracle=yes
fi
"$HBIN/horad" --state-dir "$TMP/var" --socket "$TMP/horad.sock" 2>"$TMP/horad.log" &
HPID=$!
cleanup() {
  kill "$HPID" 2>/dev/null || true
  wait "$HPID" 2>/dev/null || true
  scancel --name="$NAME" >/dev/null 2>&1 || true
  [ $started_oracle = yes ] && "$ORACLE" stop >/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
export HORA_SOCKET=$TMP/horad.sock
# The Go floor: built by the toolchain that built hora, outside its module.
mkdir "$TMP/floor"
printf 'package main\n\nimport "os"\n\nfunc main() { os.Stdout.WriteString("Submitted batch job 0\\n") }\n' >"$TMP/floor/main.go"
printf 'module floor\n\ngo %s\n' "$(awk '/^go /{print $2}' "$ROOT/go.mod")" >"$TMP/floor/go.mod"
(cd "$TMP/floor" && GOWORK=off GOFLAGS= ${GO:-go} build -trimpath -o sbatch .)
FLOOR=$TMP/floor/sbatch
for _ in $(seq 300); do [ -S "$HORA_SOCKET" ] && break; sleep 0.1; done
cd "$TMP"

# sub SYSTEM: one held submission (hora's sbatch by path, Slurm's on PATH).
sub_hora()  { "$HBIN/sbatch" --hold -J "$NAME" -o /dev/null --wrap true >/dev/null; }
sub_slurm() { /usr/bin/sbatch --hold -J "$NAME" -o /dev/null --wrap true >/dev/null; }
sub_floor() { "$FLOOR" --hold -J "$NAME" -o /dev/null --wrap true >/dev/null; }
export -f sub_hora sub_slurm sub_floor; export HBIN NAME FLOOR
count_hora()  { "$HBIN/squeue" -h -n "$NAME" -o %i | wc -l; }
count_slurm() { /usr/bin/squeue -h -n "$NAME" -o %i | wc -l; }
fill() { # fill SYSTEM TARGET: held jobs of this run up to TARGET, 8 at a time
  local have; have=$(count_$1)
  [ "$have" -lt "$2" ] && seq $(( $2 - have )) | xargs -P 8 -I{} bash -c "sub_$1" || true
}
now() { date +%s.%N; }
seqrun() { # seqrun SYSTEM → ms per submission
  local t0 t1; t0=$(now)
  for _ in $(seq "$SEQ"); do "sub_$1"; done
  t1=$(now); echo "($t1 - $t0) * 1000 / $SEQ" | bc -l
}
parrun() { # parrun SYSTEM → jobs/s with 16 submitters
  local t0 t1; t0=$(now)
  local pids=()
  for _ in $(seq 16); do ( for _ in $(seq "$PER"); do "sub_$1"; done ) & pids+=($!); done
  wait "${pids[@]}" # not horad, also a child of this shell
  t1=$(now); echo "16 * $PER / ($t1 - $t0)" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "## hora vs Slurm 22.05: sbatch --hold (make bench-slurm)"
echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load at start $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS interleaved rounds, medians; sequential: $SEQ submissions per round; concurrent: 16 submitters × $PER."
echo
echo "| queued | hora seq ms/job | Slurm seq ms/job | hora/Slurm time | Go floor seq ms | floor/Slurm time | hora 16× jobs/s | Slurm 16× jobs/s | hora/Slurm rate | Go floor 16× /s | floor/Slurm rate |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for q in $QUEUES; do
  fill hora "$q"; fill slurm "$q"
  : >"$TMP/hs"; : >"$TMP/ss"; : >"$TMP/fs"; : >"$TMP/hp"; : >"$TMP/sp"; : >"$TMP/fp"
  for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then
      seqrun hora >>"$TMP/hs"; seqrun slurm >>"$TMP/ss"; seqrun floor >>"$TMP/fs"
      parrun hora >>"$TMP/hp"; parrun slurm >>"$TMP/sp"; parrun floor >>"$TMP/fp"
    else
      seqrun floor >>"$TMP/fs"; seqrun slurm >>"$TMP/ss"; seqrun hora >>"$TMP/hs"
      parrun floor >>"$TMP/fp"; parrun slurm >>"$TMP/sp"; parrun hora >>"$TMP/hp"
    fi
  done
  hs=$(median <"$TMP/hs"); ss=$(median <"$TMP/ss"); fs=$(median <"$TMP/fs")
  hp=$(median <"$TMP/hp"); sp=$(median <"$TMP/sp"); fp=$(median <"$TMP/fp")
  printf '| %s | %.1f | %.1f | %.2f× | %.1f | %.2f× | %.0f | %.0f | %.2f× | %.0f | %.2f× |\n' "$q" \
    "$hs" "$ss" "$(echo "$hs / $ss" | bc -l)" "$fs" "$(echo "$fs / $ss" | bc -l)" \
    "$hp" "$sp" "$(echo "$hp / $sp" | bc -l)" "$fp" "$(echo "$fp / $sp" | bc -l)"
done
echo
echo "load at end $(cut -d' ' -f1-3 /proc/loadavg)"
