#!/usr/bin/env bash
# What ddp-watch costs a healthy run on the embedded cluster: the gloo training loop of
# tests/cluster/stall.py (3 nodes x 2 ranks, rank 0 printing one line per step, which the
# watcher reads and forwards) run as `srun --ddp python3 stall.py` and as
# `ddp-watch --timeout 5m -- srun --ddp python3 stall.py`, interleaved (A B A B ...) so both
# see the same load. Prints the medians and their ratio (aim: under 1.01) for two measures:
#   training: rank 0's clock from its first step line to its last (the steps themselves)
#   step:     the whole srun step, torch's import and the rendezvous included
#
#   tests/bench/bench_watch.sh [RUNS] [STEPS]   (defaults 5 and 400; the cluster must be up,
#                                               with the plugin: cluster.sh up --plugin ...)
#
# Runs inside one allocation (salloc -N3) so that job scheduling is not part of what is compared.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cluster=$root/tests/cluster/cluster.sh
runs=${1:-5}
steps=${2:-400}
watch_bin=${DDP_WATCH_BIN:-$root/build/contrib/ddp-watch/ddp-watch}
[[ $runs =~ ^[1-9][0-9]*$ && $steps =~ ^[1-9][0-9]*$ ]] ||
  { echo "bench_watch.sh: RUNS and STEPS must be positive numbers" >&2; exit 2; }
[[ -x $watch_bin ]] || { echo "bench_watch.sh: $watch_bin not built (or set DDP_WATCH_BIN)" >&2; exit 2; }
"$cluster" status >/dev/null 2>&1 ||
  { echo "bench_watch.sh: the cluster is not up (cluster.sh up --plugin ...)" >&2; exit 2; }

# Each run prints "plain|watch TRAINING_S STEP_S" on the login host inside the allocation.
# shellcheck disable=SC2016  # expanded inside the allocation
samples=$("$cluster" run env PATH=/usr/sbin:/usr/bin:/sbin:/bin OMP_NUM_THREADS=1 \
  salloc -N3 --ntasks-per-node=2 --quiet bash -c '
  runs=$1 steps=$2 py=$3 watch=$4
  one() {
    local kind=$1 t0 t1 out; shift
    t0=$(date +%s.%N)
    out=$("$@" srun --ddp /usr/bin/python3 "$py" --steps "$steps" --step-sleep 0) || return 1
    t1=$(date +%s.%N)
    awk -v kind="$kind" -v t0="$t0" -v t1="$t1" \
      "/^step [0-9]+ time / { if (!f) f = \$4; l = \$4 }
       END { printf \"%s %.3f %.3f\n\", kind, l - f, t1 - t0 }" <<<"$out"
  }
  for ((i = 0; i < runs; i++)); do
    one plain env
    one watch "$watch" --timeout 5m --
  done' bench "$runs" "$steps" "$root/tests/cluster/stall.py" "$watch_bin") || true
samples=$(grep -E '^(plain|watch) ' <<<"$samples" || true)
[[ $(grep -c '^watch ' <<<"$samples") -eq $runs && $(grep -c '^plain ' <<<"$samples") -eq $runs ]] ||
  { echo "bench_watch.sh: some runs failed:" >&2; echo "$samples" >&2; exit 1; }

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
col() { awk -v k="$1" -v c="$2" '$1 == k {print $c}' <<<"$samples" | median; }
echo "$samples" | sed 's/^/  /'
awk -v pt="$(col plain 2)" -v wt="$(col watch 2)" -v ps="$(col plain 3)" -v ws="$(col watch 3)" \
  -v n="$runs" -v s="$steps" 'BEGIN {
  printf "runs:                          %d pairs of %d steps (interleaved, one salloc -N3)\n", n, s
  printf "training median, plain srun:   %.3f s\n", pt
  printf "training median, ddp-watch:    %.3f s\n", wt
  printf "training ratio:                %.4f (aim: under 1.01)\n", wt / pt
  printf "whole step median, plain:      %.3f s\n", ps
  printf "whole step median, ddp-watch:  %.3f s\n", ws
  printf "whole step ratio:              %.4f\n", ws / ps
}'
