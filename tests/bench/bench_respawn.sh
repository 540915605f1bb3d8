#!/usr/bin/env bash
# What a bad node costs a job, with a spare and without: on the embedded cluster (4 nodes) a job
# ddpgen renders with `nodes: 3`, `heal:`, the preflight and the watchdog trains the example
# autoencoder with a checkpoint per epoch, once with `spares: 1` (respawn: a new step on the
# spare in the same job) and once with `spares: 0` (exclude node02 and requeue the job), in the
# order respawn requeue requeue respawn ... (so neither always runs first). The fault:
#   sigbus (default): the rank on node02 gets SIGBUS once epoch 2 is printed (a crash: srun
#             reports it at once). Measured on this script's clock:
#     recovery: from the SIGBUS to the line "resumed from epoch" of the new step or run (the
#               program imported torch, met its world and loaded the checkpoint: it trains next)
#   hang:     tests/cluster/stall.py's rank on node02 blocks at its step 3 while the others wait
#             in the all-reduce (a stall: the watchdog's timeout, 10 s, and the stacks come
#             first). Measured:
#     recovery: from ddp-watch's "verdict:" line to the new step's first "step 0" line
#               (torch imported, the world met, one training step done)
#   job:      from sbatch to the job's end
# Prints every sample, the medians and the ratio requeue/respawn of the recovery.
#
#   tests/bench/bench_respawn.sh [PAIRS [sigbus|hang]]   (default 3 sigbus; the cluster must be
#                                 up with 4 nodes and the plugin: cluster.sh up --nodes 4 ...)
#
# Environment: DDP_CLUSTER_ID (the cluster; default 0), DDP_CHECK_BIN, DDP_WATCH_BIN, DDPGEN
# (default: the build/ tree). Needs root, Debian's Slurm and python3-torch. Not part of the
# test suite: about a minute per pair.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cluster=$root/tests/cluster/cluster.sh
check_bin=${DDP_CHECK_BIN:-$root/build/contrib/ddp-check/ddp-check}
watch_bin=${DDP_WATCH_BIN:-$root/build/contrib/ddp-watch/ddp-watch}
ddpgen=${DDPGEN:-$root/build/gen/ddpgen}
example=$root/contrib/examples/autoencoder.py
pairs=${1:-3}
fault=${2:-sigbus}
stall=$root/tests/cluster/stall.py
id=${DDP_CLUSTER_ID:-0}

die() { echo "bench_respawn.sh: $*" >&2; exit 2; }
[[ $pairs =~ ^[1-9][0-9]*$ ]] || die "PAIRS must be a positive number"
[[ $fault == sigbus || $fault == hang ]] || die "the fault is sigbus or hang, not $fault"
for f in "$check_bin" "$watch_bin" "$ddpgen"; do [[ -x $f ]] || die "$f not built (or set its variable)"; done
"$cluster" status >/dev/null 2>&1 || die "the cluster is not up (cluster.sh up --nodes 4 --plugin ...)"
# cluster.sh's state directory for this id (as tests/cluster/lib.bash finds it).
if ((id == 0)); then state=/tmp/ddp-cluster; else state=/tmp/ddp-cluster-$id; fi
state=${DDP_CLUSTER_DIR:-$state}
(($(cat "$state/nodes" 2>/dev/null || echo 0) >= 4)) || die "the cluster needs 4 nodes (cluster.sh up --nodes 4)"

work=$(mktemp -d /tmp/ddp-bench-respawn.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
ln -s "$check_bin" "$work/bin/ddp-check"
ln -s "$watch_bin" "$work/bin/ddp-watch"
cat >"$work/site.yaml" <<'SITE'
extends: local
partitions:
  replace:
    - {name: debug, max_nodes: 4, max_time: "1:00:00"}
SITE

netns() { if ((id == 0)); then echo "ddpc-$1"; else echo "ddpc$id-$1"; fi; }
now() { date +%s.%N; }

# one KIND SPARES: one job; prints "KIND RECOVERY_S JOB_S".
one() {
  local kind=$1 spares=$2 dir=$work/$1.$RANDOM job t_submit t_fault t_resumed deadline pid
  mkdir "$dir"
  local script=$example args='[--epochs, "5", --epoch-sleep, "2"]' watchdog='{timeout: 60s, grace: 5s}'
  if [[ $fault == hang ]]; then
    script=$stall args='[--steps, "8", --at-step, "3", --hang-node, node02]'
    watchdog='{timeout: 10s, startup: 120s, grace: 20s}'
  fi
  cat >"$dir/job.yaml" <<JOB
name: bench-$kind
nodes: 3
spares: $spares
procs_per_node: 1
time: "00:05:00"
launcher: srun
python: /usr/bin/python3
script: $script
args: $args
env: {OMP_NUM_THREADS: "1"}
output: $dir/job.out
checkpoint: {dir: $dir/ckpt}
preflight: {timeout: 30s}
watchdog: $watchdog
heal: {max_requeues: 2}
JOB
  "$ddpgen" --profile "$work/site.yaml" "$dir/job.yaml" -o "$dir/job.slurm"
  t_submit=$(now)
  job=$(cd "$dir" && "$cluster" run env PATH="$work/bin:/usr/sbin:/usr/bin:/sbin:/bin" sbatch --parsable job.slurm)
  deadline=$((SECONDS + 180))
  local finished
  if [[ $fault == hang ]]; then
    until grep -q "^ddp-watch: verdict: " "$dir/job.out" 2>/dev/null; do
      ((SECONDS < deadline)) || die "job $job ($kind): no verdict in 180 s"
      sleep 0.05
    done
    t_fault=$(now)
    until (($(grep -c "^step 0 time " "$dir/job.out" 2>/dev/null) >= 2)); do
      ((SECONDS < deadline + 120)) || die "job $job ($kind): no new step in 300 s"
      sleep 0.05
    done
    finished="done 8 steps world 3"
  else
    until grep -q "^epoch 2/5 loss " "$dir/job.out" 2>/dev/null; do
      ((SECONDS < deadline)) || die "job $job ($kind): no epoch 2 in 180 s"
      sleep 0.1
    done
    for pid in $(pgrep -f "python3 $example"); do
      [[ $(ip netns identify "$pid" 2>/dev/null) == "$(netns node02)" ]] || continue
      grep -qz "^DDP_CHECKPOINT_DIR=$dir/ckpt$" "/proc/$pid/environ" 2>/dev/null || continue
      kill -BUS "$pid"
      t_fault=$(now)
      break
    done
    [[ -n ${t_fault:-} ]] || die "job $job ($kind): no training process on node02"
    until grep -q "^resumed from epoch " "$dir/job.out" 2>/dev/null; do
      ((SECONDS < deadline + 120)) || die "job $job ($kind): no resumed step in 300 s"
      sleep 0.05
    done
    finished="weights identical on 3 ranks"
  fi
  t_resumed=$(now)
  until [[ $("$cluster" run squeue -h -j "$job" 2>/dev/null) == "" ]]; do
    ((SECONDS < deadline + 240)) || die "job $job ($kind): still running after 420 s"
    sleep 0.2
  done
  grep -qx "$finished" "$dir/job.out" || die "job $job ($kind) did not finish its training"
  awk -v k="$kind" -v f="$t_fault" -v r="$t_resumed" -v s="$t_submit" -v e="$(now)" \
    'BEGIN { printf "%s %.2f %.2f\n", k, r - f, e - s }'
}

samples=""
for ((i = 0; i < pairs; i++)); do
  if ((i % 2 == 0)); then samples+=$(one respawn 1)$'\n'$(one requeue 0)$'\n'
  else samples+=$(one requeue 0)$'\n'$(one respawn 1)$'\n'; fi
done

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
col() { awk -v k="$1" -v c="$2" '$1 == k {print $c}' <<<"$samples" | median; }
echo "kind     recovery_s job_s"
grep . <<<"$samples" | sed 's/^/  /'
awk -v a="$(col respawn 2)" -v b="$(col requeue 2)" -v ja="$(col respawn 3)" -v jb="$(col requeue 3)" \
  -v n="$pairs" -v fault="$fault" 'BEGIN {
  printf "runs:             %d pairs, embedded cluster of 4 nodes, a 3-node job, fault %s\n", n, fault
  printf "                  respawn    requeue    requeue/respawn\n"
  printf "recovery median:  %7.2f s  %7.2f s  %.1fx\n", a, b, b / a
  printf "job median:       %7.2f s  %7.2f s\n", ja, jb
}'
