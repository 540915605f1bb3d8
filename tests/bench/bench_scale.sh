#!/usr/bin/env bash
# What --ddp, ddp-check, ddp-watch and the no-plugin script cost as the cluster grows: for each
# size N it starts the embedded cluster with N nodes (cluster.sh up --nodes N) and measures
#   - `srun --ddp true` against plain `srun true`, 1 and 8 tasks per node, interleaved pairs in
#     one allocation: medians and their ratio;
#   - ddp-check under --ddp, 1 and 4 ranks per node: srun's wall time and ddp-check's own
#     rendezvous time; and the longest line of a ddp-check fault that names every node;
#   - a gloo all-reduce of N x 1 ranks, where this machine's memory holds N imports of torch;
#   - ddp-watch: the time from the stall (rank 0's last step line) to the verdict with one hung
#     rank, on 32 and 64 nodes with the gloo training of tests/cluster/stall.py, and on N >= 128
#     with tests/bench/stall_light.py (the same hang without torch); the verdict's length;
#   - the no-plugin script (ddpgen, ddp_plugin: false): every task's head node and port, on
#     N - 1 nodes whose list has a gap (node[001,003-256]).
# Then tests/bench/scale_report.py writes the table, the plot and the machine to
# doc/performance.md. Not part of the test suite: it takes 15 to 25 minutes on 2 cores.
#
#   tests/bench/bench_scale.sh [N...]      (default: 4 16 64 256)
#
# Environment: DDP_CLUSTER_ID (the cluster it starts and stops; default 0), DDP_PLUGIN,
# DDP_BENCH_LIGHT_FROM (the smallest N for the torch-free ddp-watch run, default 128),
# DDP_CHECK_BIN, DDP_WATCH_BIN, DDPGEN (default: the build/ tree), DDP_BENCH_OUT (results
# directory, default /tmp/ddp-bench-scale), DDP_BENCH_DOC (default doc/performance.md).
# Needs root, Debian's Slurm and python3-torch; the plot needs python3-matplotlib
# (apt-get install python3-matplotlib), without it the table is written alone.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cluster=$root/tests/cluster/cluster.sh
plugin=${DDP_PLUGIN:-$root/build/spank/spank_ddp.so}
check_bin=${DDP_CHECK_BIN:-$root/build/contrib/ddp-check/ddp-check}
watch_bin=${DDP_WATCH_BIN:-$root/build/contrib/ddp-watch/ddp-watch}
ddpgen=${DDPGEN:-$root/build/gen/ddpgen}
out=${DDP_BENCH_OUT:-/tmp/ddp-bench-scale}
doc=${DDP_BENCH_DOC:-$root/doc/performance.md}
sizes=("$@")
((${#sizes[@]})) || sizes=(4 16 64 256)
# Bytes of memory one rank of the all-reduce needs: measured below, from one import of torch.
rank_bytes=0

die() { echo "bench_scale.sh: $*" >&2; exit 2; }
for f in "$plugin" "$check_bin" "$watch_bin" "$ddpgen"; do [[ -x $f || -f $f ]] || die "$f not built (or set its variable)"; done
for n in "${sizes[@]}"; do [[ $n =~ ^[1-9][0-9]*$ ]] || die "N must be a number of nodes: $n"; done
mkdir -p "$out"
results=$out/results.tsv
: >"$results"

record() { echo "$*" | tee -a "$results"; }
cl() { timeout --kill-after=10 "$1" "$cluster" run "${@:2}"; }

# The machine and its load, for the report.
machine() {
  record "machine cpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  record "machine cores $(nproc)"
  record "machine memory_gib $(awk '/MemTotal/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo)"
  record "machine kernel $(uname -r)"
  record "machine slurm $(slurmctld -V)"
  record "machine torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')"
  record "machine date $(date -u +%FT%TZ)"
}

load_now() { cut -d' ' -f1 /proc/loadavg; }

# The memory one process adds by importing torch.distributed: its private dirty pages (heap,
# Python objects); the libraries' file pages are shared by every rank on the machine.
measure_rank_bytes() {
  rank_bytes=$(/usr/bin/python3 -c '
import torch, torch.distributed
fields = [line.split() for line in open("/proc/self/smaps_rollup")]
print(sum(int(f[1]) * 1024 for f in fields if f[0] == "Private_Dirty:"))')
  record "machine rank_mib $((rank_bytes / 1048576))"
}

# Whether N ranks of torch fit in 60% of the memory available now (the rest: gloo's buffers,
# the slurmds, the machine's other work); else prints why not.
allreduce_fits() {
  local n=$1 avail
  avail=$(awk '/MemAvailable/ { printf "%.0f", $2 * 1024 }' /proc/meminfo)
  if ((n * rank_bytes > avail / 10 * 6)); then
    echo "$n ranks x $((rank_bytes / 1048576)) MiB = $((n * rank_bytes / 1048576)) MiB > 60% of the $((avail / 1048576)) MiB available"
  fi
}

# sbatch a job of M nodes x 1 task that runs ddp-watch around `srun --ddp PROGRAM...`, and
# records the seconds from rank 0's last step line to ddp-watch's return, the verdict and its
# length. KIND names the row: stall (torch) or light (no torch).
watch_stall() {
  local n=$1 m=$2 kind=$3 hang=$(($2 / 2 + 1)); shift 3
  local dir=$out/watch-$kind-$m id log last end verdict
  rm -rf "$dir" && mkdir -p "$dir"
  cat >"$dir/job.sh" <<JOB
#!/bin/bash
#SBATCH --nodes=$m --ntasks-per-node=1 --time=15:00 --output=$dir/job.out
export OMP_NUM_THREADS=1
status=0
$watch_bin --timeout 15s --startup 600s --grace 10s --stacks $dir/stacks.txt -- srun --ddp $* --hang-rank $hang --at-step 20 || status=\$?
echo "watch exit \$status at \$(date +%s.%N)"
JOB
  id=$(cd "$dir" && cl 30 sbatch --parsable job.sh)
  local deadline=$((SECONDS + 900))
  while [[ -n $(cl 30 squeue --noheader --jobs="$id" 2>/dev/null) ]] && ((SECONDS < deadline)); do sleep 2; done
  log=$(cat "$dir/job.out" 2>/dev/null || true)
  last=$(grep -E '^step [0-9]+ time ' <<<"$log" | tail -n 1 | awk '{print $4}')
  end=$(sed -n 's/^watch exit [0-9]* at //p' <<<"$log")
  verdict=$(sed -n 's/^ddp-watch: verdict: //p' <<<"$log" | head -n 1)
  if [[ -z $last || -z $end || -z $verdict ]]; then
    record "error watch $kind $m: no verdict (see $dir/job.out)"
    return 0
  fi
  local named=no
  grep -qE "^rank $hang on node0*$((hang + 1)) " <<<"$verdict" && named=yes
  record "watch $n $kind $m $(awk -v a="$last" -v b="$end" 'BEGIN { printf "%.1f", b - a }') ${#verdict} $named"
  record "watch_line $n $kind $m $verdict"
}

# The no-plugin script of ddpgen on N - 1 nodes, the second node excluded so that the node list
# has a gap: every task must print the first node and one port.
noplugin() {
  local n=$1 m=$(($1 - 1)) dir=$out/noplugin-$1 second
  ((m >= 2)) || return 0
  rm -rf "$dir" && mkdir -p "$dir"
  second=$(printf 'node%0*d' "$(( ${#n} < 2 ? 2 : ${#n} ))" 2)
  # The local profile, without the plugin and with a partition as large as the cluster.
  printf 'extends: %s\nddp_plugin: false\npartitions:\n  replace:\n    - name: debug\n      max_nodes: %d\n      max_time: "1:00:00"\n' \
    "$root/site-profiles/local.yaml" "$n" >"$dir/noplugin.yaml"
  printf 'import os, socket\nprint("task", os.environ["RANK"], socket.gethostname(), os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"], os.environ["SLURM_JOB_NODELIST"], flush=True)\n' >"$dir/probe.py"
  printf 'name: probe\nnodes: %d\nprocs_per_node: 1\ntime: "00:05:00"\nlauncher: srun\nscript: %s\noutput: %s\n' \
    "$m" "$dir/probe.py" "$dir/job.out" >"$dir/job.yaml"
  "$ddpgen" --profile "$dir/noplugin.yaml" "$dir/job.yaml" -o "$dir/job.slurm"
  local id deadline=$((SECONDS + 300))
  id=$(cl 30 sbatch --parsable --exclude="$second" "$dir/job.slurm")
  while [[ -n $(cl 30 squeue --noheader --jobs="$id" 2>/dev/null) ]] && ((SECONDS < deadline)); do sleep 1; done
  local first list tasks agree
  first=$(printf 'node%0*d' "$(( ${#n} < 2 ? 2 : ${#n} ))" 1)
  tasks=$(grep -c '^task ' "$dir/job.out" || true)
  list=$(awk '/^task /{print $6; exit}' "$dir/job.out")
  # Every task: head node = the first node, one port for all.
  agree=$(awk -v f="$first" '/^task / { if ($4 == f) a++; p[$5] = 1 } END { n = 0; for (k in p) n++; print a + 0, n }' "$dir/job.out")
  record "noplugin $n $m $tasks ${agree% *} ${agree#* } $list"
}

one_size() {
  local n=$1 pairs=15 t0
  ((n >= 64)) && pairs=9
  ((n >= 256)) && pairs=5
  record "load $n before $(load_now)"
  t0=$(date +%s%N)
  timeout 600 "$cluster" up --nodes "$n" --plugin "$plugin" >"$out/up-$n.log" 2>&1 ||
    { record "error up $n: $(tail -n 2 "$out/up-$n.log" | tr '\n' ' ')"; return 0; }
  record "up $n $(awk -v d=$(($(date +%s%N) - t0)) 'BEGIN { printf "%.1f", d / 1e9 }')"
  local py=- why
  why=$(allreduce_fits "$n")
  if [[ -z $why ]]; then py=$root/contrib/examples/allreduce.py; else record "skip allreduce $n: $why"; fi
  # salloc's own bound: a step that can never finish must not hold the bench for ever.
  cl 1800 salloc -N "$n" --quiet "$root/tests/bench/scale_steps.sh" "$n" "$pairs" 3 "$check_bin" "$py" |
    sed -E "s/^([a-z_]+) /\1 $n /" | while read -r line; do record "$line"; done
  for m in 32 64; do
    ((m <= n && n <= 64)) || continue
    [[ -z $(allreduce_fits "$m") ]] || { record "skip watch stall $m: $(allreduce_fits "$m")"; continue; }
    watch_stall "$n" "$m" stall /usr/bin/python3 "$root/tests/cluster/stall.py" --steps 100000
  done
  ((n >= ${DDP_BENCH_LIGHT_FROM:-128})) && watch_stall "$n" "$n" light /usr/bin/python3 "$root/tests/bench/stall_light.py"
  noplugin "$n"
  record "load $n after $(load_now)"
  "$cluster" down >/dev/null 2>&1 || true
}

machine
measure_rank_bytes
for n in "${sizes[@]}"; do one_size "$n"; done
if /usr/bin/python3 "$root/tests/bench/scale_report.py" "$results" "$doc"; then
  echo "bench_scale.sh: wrote $doc"
else
  echo "bench_scale.sh: the report failed; results in $results" >&2
  exit 1
fi
