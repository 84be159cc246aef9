#!/bin/sh
#SBATCH -J fromsbatch
#PBS -N pbsname
#PBS -l walltime=1:30:00,mem=2gb
#PBS -l nodes=2:ppn=4
#PBS -q batch@server -A proj
#PBS -o host:/tmp/out.txt
#PBS -e /tmp/err.txt
#PBS -j oe
#PBS -a 1830
#PBS -h -r n -m abe -M me@x
#PBS -l select=3:ncpus=8:mem=500mb:mpiprocs=2
#PBS -W depend=afterok:12:13
#PBS -S /bin/bash -V
cd $PBS_O_WORKDIR
#PBS -N after-the-command
