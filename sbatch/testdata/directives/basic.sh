#!/bin/bash
#SBATCH --job-name=test
#SBATCH -N 2 -t 10   # two nodes, ten minutes

# a comment
  #SBATCH --indented-is-a-comment
#SBATCH --comment="hello world" --output='out %j.txt'
#SBATCH --comment=a\ b\"c "x\"y" 'p\'q'
#SBATCH --comment=""
#SBATCHED --not-a-directive
#SBATCH
#SBATCH	--qos=tab
#SBATCH --account=$HOME#rest
#SLURM --partition=old
echo hello
#SBATCH --after-command
