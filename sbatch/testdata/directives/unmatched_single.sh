#!/bin/sh


#SBATCH --x='a b
