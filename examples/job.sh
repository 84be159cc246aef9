#!/bin/sh
#SBATCH -J job
#SBATCH -t 5
# The README tour's sample job: says where it runs, as which array task
# (when submitted with --array), and works a little.
echo "job ${SLURM_JOB_ID} task ${SLURM_ARRAY_TASK_ID:-none} on $(hostname) (${SLURM_JOB_NODELIST})"
sleep "${1:-2}"
