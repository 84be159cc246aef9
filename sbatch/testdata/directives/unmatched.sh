#!/bin/sh
#SBATCH -t 5
#SBATCH --comment="open
sleep 1
