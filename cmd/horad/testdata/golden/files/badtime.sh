#!/bin/bash
#SBATCH --time=bogus
true
