#!/bin/bash
#SBATCH -J gold_script
#SBATCH -n 1
#SBATCH -t 1:00:00
#SBATCH -o script-%j.out
sleep 900
