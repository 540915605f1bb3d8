#!/usr/bin/env bats
# ddp-watch on the embedded cluster: a real gloo job (stall.py, 3 nodes x 2 ranks) under sbatch,
# wrapped by ddp-watch in the batch script, with both launchers (srun tasks, torchrun).
#   - one rank blocks forever in its data loading while the others wait in the gradient
#     all-reduce: the verdict names that rank, its node and line within timeout + 30 s of the
#     last step, the stacks file holds every rank's stack, and the job ends (allocation freed);
#   - one rank is killed with SIGKILL: the summary names it, its node and the signal, and calls
#     the others collateral;
#   - a healthy run gets no word from the watchdog and its own exit status.
#
# Needs: the cluster (cluster.sh up --plugin ...spank_ddp.so), Debian's python3-torch, and
# ddp-watch ($DDP_WATCH_BIN, else build/contrib/ddp-watch/ddp-watch). Missing ones skip, visibly.

bats_require_minimum_version 1.5.0
load lib

k_stall_py=$REPO/tests/cluster/stall.py
k_job_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
k_timeout=15  # the watchdog's --timeout in these tests, seconds
# Its --grace: ddp-watch's default. The helper dumps the processes one at a time, and on a
# machine busy with other clusters six dumps took more than 10 s.
k_grace=20

setup() {
  skip_unless_cluster
  need_torch
  watch_bin=${DDP_WATCH_BIN:-$REPO/build/contrib/ddp-watch/ddp-watch}
  [[ -x $watch_bin ]] || skip "ddp-watch not built (cmake --build build) and DDP_WATCH_BIN unset"
  work=$(mktemp -d /tmp/ddp-watch.XXXXXX)
}

teardown() {
  [[ -n ${work:-} ]] && rm -rf "$work"
}

# job LAUNCH_LINE...: writes $work/job.sh, which runs ddp-watch around LAUNCH_LINE and prints
# "watch exit N at T" when it returns. Prints the job id.
submit() {
  cat >"$work/job.sh" <<JOB
#!/bin/bash
#SBATCH --nodes=3 --ntasks-per-node=2 --time=5:00 --output=$work/job-%j.out
export OMP_NUM_THREADS=1
# torch 1.13 on Python 3.11 needs these for torchrun (site-profiles/local.yaml).
export PET_REDIRECTS=1 PET_TEE=1
status=0
$watch_bin --timeout ${k_timeout}s --startup 120s --grace ${k_grace}s --stacks $work/stacks.txt -- $* || status=\$?
echo "watch exit \$status at \$(date +%s.%N)"
exit \$status
JOB
  (cd "$work" && cl env PATH="$k_job_path" sbatch --parsable job.sh)
}

# The job's log, after it ended in state $2.
finished() {
  local state
  state=$(wait_job_end "$1" 240)
  log=$(cat "$work/job-$1.out")
  echo "$log" | grep -v '^step ' | cut -c1-300
  echo "job $1 ended $state"
  [ "$state" = "$2" ]
}

# Seconds between rank 0's last step line and the watchdog's return.
verdict_delay() {
  local last end
  last=$(grep -E '^(\[default0\]:)?step [0-9]+ time ' <<<"$log" | tail -n 1 | awk '{print $4}')
  end=$(sed -n 's/^watch exit [0-9]* at //p' <<<"$log")
  awk -v a="$last" -v b="$end" 'BEGIN { printf "%.1f\n", b - a }'
}

check_stall_verdict() {
  local rank=$1 node=$2 others=$3 delay
  grep -q '^watch exit 124 at ' <<<"$log"
  grep -q '^ddp-watch: no progress for 15 s (no output): asking every task for its stack$' <<<"$log"
  grep -Eq "^ddp-watch: verdict: rank $rank on $node at stall\.py:[0-9]+ in load_batch; ranks $others on node\[01-03\] wait in " <<<"$log"
  delay=$(verdict_delay)
  echo "# verdict $delay s after the last step (limit: timeout $k_timeout s + grace $k_grace s + 20 s)" >&3
  awk -v d="$delay" -v t="$k_timeout" -v g="$k_grace" 'BEGIN { exit !(d >= t && d <= t + g + 20) }'
  # The stacks file: the verdict, then one dump per rank, the stuck one in load_batch.
  head -n 1 "$work/stacks.txt" | grep -q "^ddp-watch: verdict: rank $rank on $node "
  [ "$(grep -c '^Fatal Python error: Aborted$' "$work/stacks.txt")" -ge 6 ]
  grep -q "^=== task [0-9]*, rank $rank, node $node, elsewhere ===$" "$work/stacks.txt"
  # The allocation is freed: the job is gone from the queue.
  [ -z "$(cl squeue --noheader --jobs="$id" 2>/dev/null)" ]
}

@test "srun tasks: a rank stuck in data loading is named with its node and line" {
  id=$(submit srun --ddp /usr/bin/python3 "$k_stall_py" --steps 100000 --hang-rank 4 --at-step 20)
  finished "$id" FAILED
  check_stall_verdict 4 node03 0-3,5
  # Each rank's stack is attributed: rank 0 waits where the others do. RANK 0 is node01's first
  # task, whose task id is Slurm's (task 2 under Slurm 26.05's topology order).
  task=$(slurm_layout -N3 --ntasks-per-node=2 | awk '$1 == "node01" && $2 == 0 {print $3}')
  grep -q "^=== task $task, rank 0, node node01, waits in " "$work/stacks.txt"
}

# Rank 4 is the first worker of node03: rank 1 (and 3) dump after a worker of their own node
# has died, and must still be seen waiting where they waited (without the step frozen on every
# node first, rank 1 left its all-reduce and printed "Garbage-collecting, no Python frame").
@test "torchrun: a stuck worker is named by its rank, the launchers set apart" {
  slurm_side_covered_by "\"srun tasks: a rank stuck in data loading\" (the stacks asked through Slurm, the step ended)"
  id=$(submit srun --ddp=torchrun --ntasks=3 --ntasks-per-node=1 \
    torchrun --nproc_per_node=2 "$k_stall_py" --steps 100000 --hang-rank 4 --at-step 20)
  finished "$id" FAILED
  check_stall_verdict 4 node03 0-3,5
  [ "$(grep -c ', launcher ===$' "$work/stacks.txt")" -eq 3 ]
}

@test "srun tasks: a rank killed with SIGKILL is the first failure, the others collateral" {
  id=$(submit srun --ddp /usr/bin/python3 "$k_stall_py" --steps 100000 --die-rank 3 --at-step 20)
  finished "$id" FAILED
  grep -q '^ddp-watch: first failure: rank 3 on node02, killed by SIGKILL (signal 9); collateral: ranks 0-2,4,5 ' <<<"$log"
  [ "$(grep -c '^ddp-watch: verdict' <<<"$log")" -eq 0 ]
}

@test "torchrun: a worker killed with SIGKILL is the first failure" {
  slurm_side_covered_by "\"srun tasks: a rank killed with SIGKILL\" and heal.bats' \"a bug that fails on every node\" (srun's lines for tasks that end)"
  id=$(submit srun --ddp=torchrun --ntasks=3 --ntasks-per-node=1 \
    torchrun --nproc_per_node=2 "$k_stall_py" --steps 100000 --die-rank 3 --at-step 20)
  finished "$id" FAILED
  grep -q '^ddp-watch: first failure: rank 3 on node02, killed by SIGKILL (signal 9); collateral: ranks ' <<<"$log"
}

@test "a healthy run: no alarm, the program's output unchanged, its exit status kept" {
  slurm_side_covered_by "every other case here (srun under ddp-watch, its output passed through)"
  id=$(submit srun --ddp /usr/bin/python3 "$k_stall_py" --steps 60)
  finished "$id" COMPLETED
  grep -q '^watch exit 0 at ' <<<"$log"
  grep -q '^done 60 steps world 6$' <<<"$log"
  [ "$(grep -c '^step [0-9]* time ' <<<"$log")" -eq 60 ]
  [ "$(grep -c 'ddp-watch' <<<"$log")" -eq 0 ]
  [ ! -e "$work/stacks.txt" ]
}

@test "ddpgen watchdog key: a stall is requeued once (checkpoint.max_restarts 1), then the job fails" {
  slurm_side_covered_by "\"srun tasks: a rank stuck in data loading\" (the stall) and requeue.bats (the requeue and its cap)"
  need_ddpgen
  cat >"$work/job.yaml" <<YAML
name: watchdog-requeue
nodes: 3
procs_per_node: 2
time: "5:00"
launcher: srun
script: $k_stall_py
args: [--steps, "100000", --hang-rank, "4", --at-step, "20"]
env: {OMP_NUM_THREADS: "1"}
watchdog: {timeout: 15s, startup: 2m, grace: 20s, on_stall: requeue}
checkpoint: {dir: $work/ckpt, requeue: true, max_restarts: 1}
output: $work/job-%j.out
YAML
  "$DDPGEN" --profile local "$work/job.yaml" -o "$work/job.slurm"
  grep -q '^ddp-watch --timeout=15 --startup=120 --grace=20 --stacks="ddp-watch-${SLURM_JOB_ID}.stacks" -- \\$' "$work/job.slurm"
  grep -q '^#SBATCH --requeue$' "$work/job.slurm"
  id=$(cd "$work" && cl env PATH="$(dirname "$watch_bin"):$k_job_path" sbatch --parsable job.slurm)
  finished "$id" FAILED
  # The culprit is named in both runs. On a loaded machine a run's verdict may first say that
  # the ranks of one node printed no stack: Slurm ended them (SIGCONT, SIGTERM) once another
  # node's ranks had dumped and died, before that node's helper reached them.
  [ "$(grep -cE '^ddp-watch: verdict: (ranks? [0-9,-]+ on node[][0-9,-]+ printed no stack [^;]*; )?rank 4 on node03 at stall\.py:[0-9]* in load_batch; ' <<<"$log")" -eq 2 ]
  grep -q "^ddpgen: ddp-watch: the training step stalled: requeueing job $id$" <<<"$log"
  grep -q "^ddpgen: ddp-watch: the training step stalled: not requeueing job $id: it has restarted 1 times, the limit (checkpoint.max_restarts: 1)$" <<<"$log"
  [ -s "$work/ddp-watch-$id.stacks" ]
}
