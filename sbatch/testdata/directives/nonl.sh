#!/bin/sh
#SBATCH -J last-line-no-newline