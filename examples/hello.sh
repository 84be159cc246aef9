#!/bin/sh
#SBATCH --output=slurm-%j.out
# A first job: where it runs and what hora tells it.
echo "hello from job $SLURM_JOB_ID ($SLURM_JOB_NAME) on $SLURMD_NODENAME"
echo "nodes: $SLURM_JOB_NODELIST ($SLURM_JOB_NUM_NODES), cpus here: $SLURM_CPUS_ON_NODE"
sleep 2
echo "done"
