#!/bin/sh
#SBATCH -J a
   	
#SBATCH -J b
	sleep 1
#SBATCH -J c
