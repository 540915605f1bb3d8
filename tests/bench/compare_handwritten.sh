#!/usr/bin/env bash
# ddpgen + --ddp against the way the hand-written job scripts do it, on the embedded cluster.
#
#   tests/bench/compare_handwritten.sh [RUNS] [DDPGEN]   (default 7 and build/gen/ddpgen; cluster up)
#
# Both jobs run tests/bench/rendezvous.py on 3 nodes x 2 tasks with gloo. Measured, per job,
# from just before `sbatch` to the moment the LAST rank is past init_process_group (each rank
# prints its wall-clock time; all hosts of the embedded cluster share one clock). The two
# kinds of job are submitted alternately, one at a time, so both see the same machine.
#
#   ddp   the script ddpgen renders from the `local` profile, launcher srun: one `srun --ddp`.
#   hand  what the hand-written scripts do: the head from `scontrol show hostnames | head -1`, its
#         address from an extra `srun -N1 -n1 -w HEAD hostname -I` step, a fixed port, and
#         ranks from SLURM_PROCID/SLURM_LOCALID in each task.
#
# Then one more job of each kind runs under `strace -f -e trace=execve` around the batch
# script, to count the processes the batch shell starts and the job steps (srun calls).
# Prints medians, the ratio ddp/hand (goal <= 1.0), and the counts.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cluster=$root/tests/cluster/cluster.sh
runs=${1:-7}
ddpgen=${2:-$root/build/gen/ddpgen}
python=/usr/bin/python3
die() { echo "compare_handwritten.sh: $*" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive number"
[[ -x $ddpgen ]] || die "no ddpgen at $ddpgen (build it, or pass its path)"
command -v strace >/dev/null || die "strace is needed for the process count (apt-get install strace)"
"$cluster" status >/dev/null 2>&1 || die "the cluster is not up (cluster.sh up --plugin ...)"

# On a path every node of the embedded cluster sees (they share this machine's /tmp).
work=$(mktemp -d /tmp/ddp-compare.XXXXXX)
[[ ${DDP_BENCH_KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT
probe=$root/tests/bench/rendezvous.py

# ddpgen's side: a job file and a profile that extends `local` with Debian's Python.
cat >"$work/profile.yaml" <<EOF
extends: local
description: local, with the Python that has torch
python: $python
EOF
cat >"$work/job.yaml" <<EOF
name: compare-ddp
nodes: 3
procs_per_node: 2
gpus_per_node: 0
time: "00:10:00"
launcher: srun
script: $probe
EOF
"$ddpgen" --profile "$work/profile.yaml" "$work/job.yaml" -o "$work/ddp.slurm"

# The hand way, written as the hand-written scripts write it.
cat >"$work/hand.slurm" <<EOF
#!/bin/bash
#SBATCH --job-name=compare-hand
#SBATCH --nodes=3
#SBATCH --ntasks-per-node=2
#SBATCH --time=00:10:00
nodes=\$(scontrol show hostnames "\$SLURM_JOB_NODELIST")
head_node=\$(echo "\$nodes" | head -n 1)
master_ip=\$(srun -N1 -n1 -w "\$head_node" hostname -I | awk '{print \$1}')
export MASTER_ADDR=\$master_ip
export MASTER_PORT=12234
srun bash -c 'RANK=\$SLURM_PROCID LOCAL_RANK=\$SLURM_LOCALID WORLD_SIZE=\$SLURM_NTASKS exec $python $probe'
EOF

wait_end() {
  local id=$1 deadline=$((SECONDS + 180)) state
  while ((SECONDS < deadline)); do
    state=$("$cluster" run scontrol show job -o "$id" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2) || state=""
    case $state in COMPLETED) return 0 ;; FAILED | CANCELLED | TIMEOUT | NODE_FAIL) die "job $id ended $state" ;; esac
    sleep 0.3
  done
  die "job $id did not end within 180 s"
}

# Runs one job of kind $1 and prints the milliseconds from sbatch to the last rank past init.
one_run() {
  local kind=$1 out=$work/$1.$2.out t0 id last
  t0=$(date +%s%N)
  id=$("$cluster" run sbatch --parsable --output="$out" "$work/$kind.slurm")
  wait_end "$id"
  [[ $(awk '$1 == "past_init" && $3 == 6' "$out" | wc -l) -eq 6 ]] ||
    { cat "$out" >&2; die "$kind job $id: not all 6 ranks got past init in a world of 6"; }
  last=$(awk '$1 == "past_init" {print $4}' "$out" | sort -n | tail -1)
  echo $(((last - t0) / 1000000))
}

ddp_ms=() hand_ms=()
for ((i = 0; i < runs; i++)); do
  ddp_ms+=("$(one_run ddp "$i")")
  hand_ms+=("$(one_run hand "$i")")
done

# Counting run: the batch script under strace; every execve is a process it started.
count_run() {
  local kind=$1 wrap=$work/$1.count.slurm
  { grep '^#SBATCH' "$work/$kind.slurm"
    echo "exec strace -f -qq -e trace=execve -e signal=none -o $work/$kind.trace bash $work/$kind.slurm"
  } | sed '1i #!/bin/bash' >"$wrap"
  local id
  id=$("$cluster" run sbatch --parsable --output="$work/$kind.count.out" "$wrap")
  wait_end "$id"
  # Successful execs only (strace splits concurrent ones into "<unfinished ...>" and
  # "<... execve resumed>" lines); the first is the batch shell itself.
  awk '
    /execve\("/ { match($0, /execve\("[^"]*"/); path[$1] = substr($0, RSTART + 8, RLENGTH - 9) }
    /= 0$/ && ($0 ~ /execve\(/ || $0 ~ /execve resumed/) {
      procs++; if (path[$1] ~ /\/srun$/) steps++
    }
    END { printf "%d %d\n", procs - 1, steps }' "$work/$kind.trace"
}
read -r ddp_procs ddp_steps < <(count_run ddp)
read -r hand_procs hand_steps < <(count_run hand)

median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
md=$(median "${ddp_ms[@]}")
ms=$(median "${hand_ms[@]}")
echo "runs: $runs of each, alternating; 3 nodes x 2 tasks, gloo"
echo "ddp  (ddpgen + srun --ddp):   sbatch -> all ranks past init_process_group: median ${md} ms  (${ddp_ms[*]})"
echo "hand (hand-written, hand way): sbatch -> all ranks past init_process_group: median ${ms} ms  (${hand_ms[*]})"
awk -v a="$md" -v b="$ms" 'BEGIN { printf "ratio ddp/hand: %.3f (goal <= 1.0)\n", a / b }'
echo "batch shell starts: ddp ${ddp_procs} processes, ${ddp_steps} step(s); hand ${hand_procs} processes, ${hand_steps} step(s)"
