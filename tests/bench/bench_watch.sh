#!/usr/bin/env bash
# What ddp-watch costs a healthy run on the embedded cluster: the gloo training loop of
# tests/cluster/stall.py (3 nodes x 2 ranks, rank 0 printing one line per step, which the
# watcher reads and forwards) run as `srun --ddp python3 stall.py` (plain) and as
# `ddp-watch --timeout 5m -- srun --ddp python3 stall.py` (watch), in the order
# plain watch watch plain ... (so neither always follows the other) inside one allocation.
# Prints, per kind, the medians of
#   training: rank 0's clock from its first step line to its last (the steps themselves)
#   step:     the whole srun step, torch's import and the rendezvous included
#   cpu:      user+sys CPU seconds of the launching process and its children on the batch
#             host (srun; plus ddp-watch itself in the watch runs; not the ranks)
# and the ratios watch/plain (aim: training under 1.01). Where other work shares the cores the
# wall-clock ratios carry that noise; the cpu difference is what the watcher itself spends.
#
#   tests/bench/bench_watch.sh [PAIRS] [STEPS]   (defaults 6 and 400; the cluster must be up,
#                                                with the plugin: cluster.sh up --plugin ...)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cluster=$root/tests/cluster/cluster.sh
pairs=${1:-6}
steps=${2:-400}
watch_bin=${DDP_WATCH_BIN:-$root/build/contrib/ddp-watch/ddp-watch}
[[ $pairs =~ ^[1-9][0-9]*$ && $steps =~ ^[1-9][0-9]*$ ]] ||
  { echo "bench_watch.sh: PAIRS and STEPS must be positive numbers" >&2; exit 2; }
[[ -x $watch_bin ]] || { echo "bench_watch.sh: $watch_bin not built (or set DDP_WATCH_BIN)" >&2; exit 2; }
"$cluster" status >/dev/null 2>&1 ||
  { echo "bench_watch.sh: the cluster is not up (cluster.sh up --plugin ...)" >&2; exit 2; }

# Each run prints "plain|watch TRAINING_S STEP_S CPU_S" on the login host, in the allocation.
# shellcheck disable=SC2016  # expanded inside the allocation
samples=$("$cluster" run env PATH=/usr/sbin:/usr/bin:/sbin:/bin OMP_NUM_THREADS=1 \
  salloc -N3 --ntasks-per-node=2 --quiet bash -c '
  pairs=$1 steps=$2 py=$3 watch=$4
  out=$(mktemp)
  trap "rm -f $out" EXIT
  one() {
    local kind=$1 t TIMEFORMAT="%R %U %S"; shift
    t=$( { time "$@" srun --ddp /usr/bin/python3 "$py" --steps "$steps" --step-sleep 0 \
           >"$out" 2>/dev/null; } 2>&1 ) || return 1
    awk -v kind="$kind" -v t="$t" "/^step [0-9]+ time / { if (!f) f = \$4; l = \$4 }
      END { split(t, x, \" \"); printf \"%s %.3f %.3f %.3f\n\", kind, l - f, x[1], x[2] + x[3] }" "$out"
  }
  for ((i = 0; i < pairs; i++)); do
    if ((i % 2 == 0)); then one plain env; one watch "$watch" --timeout 5m --
    else one watch "$watch" --timeout 5m --; one plain env; fi
  done' bench "$pairs" "$steps" "$root/tests/cluster/stall.py" "$watch_bin") || true
samples=$(grep -E '^(plain|watch) ' <<<"$samples" || true)
[[ $(grep -c '^watch ' <<<"$samples") -eq $pairs && $(grep -c '^plain ' <<<"$samples") -eq $pairs ]] ||
  { echo "bench_watch.sh: some runs failed:" >&2; echo "$samples" >&2; exit 1; }

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
col() { awk -v k="$1" -v c="$2" '$1 == k {print $c}' <<<"$samples" | median; }
echo "kind  training_s step_s cpu_s"
sed 's/^/  /' <<<"$samples"
awk -v pt="$(col plain 2)" -v wt="$(col watch 2)" -v ps="$(col plain 3)" -v ws="$(col watch 3)" \
  -v pc="$(col plain 4)" -v wc="$(col watch 4)" -v n="$pairs" -v s="$steps" 'BEGIN {
  printf "runs:              %d pairs of %d-step runs, one salloc -N3\n", n, s
  printf "                   plain      ddp-watch  ratio\n"
  printf "training median:   %8.3f s %8.3f s %.4f (aim: under 1.01)\n", pt, wt, wt / pt
  printf "whole step median: %8.3f s %8.3f s %.4f\n", ps, ws, ws / ps
  printf "cpu median:        %8.3f s %8.3f s (watcher: %+.3f s, %.2f%% of the step)\n", pc, wc,
         wc - pc, 100 * (wc - pc) / ps
}'
