#!/usr/bin/env bash
# What --ddp adds to a step launch on the embedded cluster: times `srun -N3 --ddp true` against
# `srun -N3 true`, interleaved (A B A B ...) so both see the same load, and prints the medians
# and their ratio (target <= 1.02). Each sample is one whole srun process: allocation, launch of
# 3 slurmstepd, the plugin in srun and in every slurmstepd and task, and teardown.
#
#   tests/bench/bench_srun.sh [RUNS]     (default 40; the cluster must be up: cluster.sh up)
#
# Runs inside one allocation (salloc -N3) so that job scheduling, which dominates and varies
# by seconds, is not part of what is compared.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cluster=$root/tests/cluster/cluster.sh
runs=${1:-40}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "bench_srun.sh: RUNS must be a positive number" >&2; exit 2; }
"$cluster" status >/dev/null 2>&1 || { echo "bench_srun.sh: the cluster is not up (cluster.sh up --plugin ...)" >&2; exit 2; }

# The loop runs on the login host inside the allocation; it prints "plain NS" and "ddp NS".
# shellcheck disable=SC2016  # expanded inside the allocation
samples=$("$cluster" run salloc -N3 --quiet bash -c '
  for ((i = 0; i < $1; i++)); do
    t0=$(date +%s%N); srun -N3 --ntasks-per-node=1 true;        t1=$(date +%s%N)
    srun -N3 --ntasks-per-node=1 --ddp true;                      t2=$(date +%s%N)
    echo "plain $((t1 - t0))"; echo "ddp $((t2 - t1))"
  done' bench "$runs")

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
plain=$(awk '$1 == "plain" {print $2}' <<<"$samples" | median)
ddp=$(awk '$1 == "ddp" {print $2}' <<<"$samples" | median)
[[ $(grep -c '^ddp ' <<<"$samples") -eq $runs ]] || { echo "bench_srun.sh: some steps failed:" >&2; echo "$samples" >&2; exit 1; }
awk -v a="$ddp" -v b="$plain" -v n="$runs" 'BEGIN {
  printf "runs:                    %d pairs (interleaved, one salloc -N3)\n", n
  printf "srun -N3 true median:    %.1f ms\n", b / 1e6
  printf "srun -N3 --ddp true:     %.1f ms\n", a / 1e6
  printf "ratio:                   %.3f (target <= 1.02)\n", a / b
}'
