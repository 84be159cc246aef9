#!/bin/sh
#SBATCH -J ok
#SBATCH : -N 2
