#!/usr/bin/env bash
# make demo: start horad on the embedded default in the background under
# ./var, submit a sample job with the real sbatch, and show the queue.
set -euo pipefail
cd "$(dirname "$0")/.."
export HORA_SOCKET="$PWD/var/horad.sock"
pidfile=var/horad.pid
if [ "${1:-}" = stop ]; then
	if [ -f $pidfile ] && kill "$(cat $pidfile)" 2>/dev/null; then
		echo "horad stopped (jobs still running keep running; the next horad re-attaches them)"
	else
		echo "horad is not running"
	fi
	rm -f $pidfile
	exit 0
fi
mkdir -p var
if ! [ -f $pidfile ] || ! kill -0 "$(cat $pidfile)" 2>/dev/null; then
	bin/horad >>var/horad.log 2>&1 &
	echo $! >$pidfile
	for _ in $(seq 50); do [ -S var/horad.sock ] && break; sleep 0.1; done
	[ -S var/horad.sock ] || { echo "horad did not start; see var/horad.log" >&2; tail var/horad.log >&2; exit 1; }
	echo "horad started (pid $(cat $pidfile)); log in var/horad.log, state in var/hora.db"
fi
echo
echo '$ bin/sinfo'
bin/sinfo
echo
echo '$ bin/sbatch -J hello -N 2 -t 1 examples/hello.sh'
bin/sbatch -J hello -N 2 -t 1 examples/hello.sh
echo
echo '$ bin/sbatch --array=1-4%2 examples/job.sh 1        # an array, two tasks at a time'
array=$(bin/sbatch --parsable --array=1-4%2 examples/job.sh 1)
echo "Submitted batch job $array"
echo
echo "\$ bin/sbatch --dependency=afterok:$array examples/job.sh   # runs once every task succeeded"
bin/sbatch --dependency=afterok:"$array" examples/job.sh
sleep 1
echo
echo '$ bin/squeue'
bin/squeue
sleep 2
echo
echo '$ bin/sacct -X'
bin/sacct -X
echo
echo "Output of the job: slurm-<id>.out in $(pwd)."
echo "Try:  export HORA_SOCKET=$HORA_SOCKET PATH=$PWD/bin:\$PATH; sbatch --wrap='sleep 60'; squeue; scancel <id>"
echo "Stop horad with: make stop"
