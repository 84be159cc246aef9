#!/bin/bash
#SBATCH --job-name=gold_env
#SBATCH --ntasks=1
#SBATCH --output=env-%j.out
echo "name=$SLURM_JOB_NAME nodes=$SLURM_JOB_NUM_NODES list=$SLURM_JOB_NODELIST part=$SLURM_JOB_PARTITION"
echo "ntasks=$SLURM_NTASKS cpus=$SLURM_CPUS_ON_NODE cluster=$SLURM_CLUSTER_NAME user=$SLURM_JOB_USER"
echo "submitdir=$SLURM_SUBMIT_DIR pwd=$PWD"
