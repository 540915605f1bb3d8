#!/usr/bin/env bats
# Per-rank logs and sweeps on the embedded cluster, with tiny jobs:
#   - logs: {dir} with launcher srun, 3 nodes x 2 tasks: DIR/rank-R.log for each of the six
#     ranks holds exactly that rank's lines (stdout and stderr), and the job's output still has
#     every line;
#   - the same with launcher torchrun, 2 nodes x 2 workers: each worker's file;
#   - under the watchdog, a stalled 3 x 2 job: ddp-watch names the stuck rank as before, and
#     that rank's file holds its stack;
#   - sweep: 2 x 2 parameters, parallel: 2: four array tasks, throttled to two, which see four
#     distinct combinations and write four distinct checkpoint directories (and, launcher
#     none, each its own rank-0.log);
#   - a sweep whose output is named by its values: each task's lines in its own file, sbatch's
#     file saying where they went, and ddpgen logs showing both.
#
# Needs: the cluster, ddpgen ($DDPGEN, else build/gen/ddpgen) and, for torchrun, Debian's
# python3-torch, for the watchdog ddp-watch ($DDP_WATCH_BIN, else build/contrib/ddp-watch).
# Missing ones skip, visibly. About a minute.

bats_require_minimum_version 1.5.0
load lib

# Debian's python3 (with torch for torchrun): not a pyenv or virtualenv one on the caller's PATH.
k_job_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

setup() {
  skip_unless_cluster
  need_ddpgen
  # Every node sees the same /tmp: the job files, scripts, outputs and logs live here.
  work=$(mktemp -d /tmp/ddp-sweep.XXXXXX)
  # Each rank prints three lines to stdout and one to stderr, each naming its rank.
  cat >"$work/ranks.py" <<'PY'
import os, sys
rank = os.environ.get("RANK", "?")
for i in range(3):
    print(f"line {i} of rank {rank}", flush=True)
print(f"stderr of rank {rank}", file=sys.stderr, flush=True)
PY
}

teardown() {
  [[ -n ${job:-} ]] && cl scancel "$job" 2>/dev/null
  rm -rf "$work"
}

# render NAME: $work/NAME.yaml into $work/NAME.slurm.
render() {
  "$DDPGEN" --profile local "$work/$1.yaml" -o "$work/$1.slurm"
}

# submit NAME: sbatch $work/NAME.slurm from $work; sets job to its id.
submit() {
  job=$(cd "$work" && cl env PATH="$k_job_path" sbatch --parsable "$1.slurm")
  [ -n "$job" ]
}

# check_rank_files DIR WORLD OUTPUT: DIR holds rank-0.log .. rank-(WORLD-1).log and nothing
# else, each with exactly its rank's four lines; OUTPUT (the job's) has all 4 x WORLD of them.
check_rank_files() {
  local dir=$1 world=$2 out=$3 r
  ls "$dir"
  [ "$(find "$dir" -type f | wc -l)" -eq "$world" ]
  for ((r = 0; r < world; r++)); do
    echo "rank $r:"; cat "$dir/rank-$r.log"
    [ "$(wc -l <"$dir/rank-$r.log")" -eq 4 ]
    [ "$(grep -c "of rank $r\$" "$dir/rank-$r.log")" -eq 4 ]
    [ "$(grep -c '^stderr of rank ' "$dir/rank-$r.log")" -eq 1 ]
    # Matched, not counted by line: torchrun's tee can write two workers' lines as one.
    [ "$(grep -oE "(line [0-9]|stderr) of rank $r([^0-9]|\$)" "$out" | wc -l)" -eq 4 ]
  done
}

@test "logs: launcher srun, 3 x 2: each rank's file holds exactly its lines" {
  cat >"$work/tasks.yaml" <<JOB
name: rank-logs
nodes: 3
gpus_per_node: 0
procs_per_node: 2
time: "00:02:00"
launcher: srun
script: $work/ranks.py
output: $work/tasks-%j.out
logs: {dir: "logs/\${SLURM_JOB_ID}"}
JOB
  render tasks
  submit tasks
  wait_job "$job" 60 || { cat "$work/tasks-$job.out"; false; }
  cat "$work/tasks-$job.out"
  check_rank_files "$work/logs/$job" 6 "$work/tasks-$job.out"
  # ddpgen logs --rank, from another directory, finds the (relative, made absolute) directory
  # through the job's output.
  grep -qx "ddpgen: rank logs in $work/logs/$job" "$work/tasks-$job.out"
  rank4=$(cd / && cl env PATH="$k_job_path" "$DDPGEN" logs "$job" --rank 4)
  [ "$rank4" = "$(cat "$work/logs/$job/rank-4.log")" ]
  run cl env PATH="$k_job_path" "$DDPGEN" logs "$job" --rank 6
  [ "$status" -eq 1 ]
  grep -q "rank-6.log" <<<"$output"
}

@test "logs: launcher torchrun, 2 x 2: each worker's file holds exactly its lines" {
  need_torch
  cat >"$work/workers.yaml" <<JOB
name: rank-logs-torchrun
nodes: 2
gpus_per_node: 0
procs_per_node: 2
time: "00:02:00"
launcher: torchrun
script: $work/ranks.py
output: $work/workers-%j.out
logs: {dir: "$work/logs/\${SLURM_JOB_ID}"}
JOB
  render workers
  grep -q -- '--no_python bash -c ' "$work/workers.slurm"
  submit workers
  wait_job "$job" 90 || { cat "$work/workers-$job.out"; false; }
  cat "$work/workers-$job.out"
  check_rank_files "$work/logs/$job" 4 "$work/workers-$job.out"
}

@test "logs under the watchdog: ddp-watch still names the stuck rank, whose file holds its stack" {
  need_torch
  watch_bin=${DDP_WATCH_BIN:-$REPO/build/contrib/ddp-watch/ddp-watch}
  [[ -x $watch_bin ]] || skip "ddp-watch not built (cmake --build build) and DDP_WATCH_BIN unset"
  cat >"$work/stall.yaml" <<JOB
name: rank-logs-stall
nodes: 3
gpus_per_node: 0
procs_per_node: 2
time: "00:05:00"
launcher: srun
python: /usr/bin/python3
script: $REPO/tests/cluster/stall.py
args: [--steps, "100000", --hang-rank, "4", --at-step, "10"]
env: {OMP_NUM_THREADS: "1"}
watchdog: {timeout: 10s, startup: 2m, grace: 10s}
output: $work/stall-%j.out
logs: {dir: "$work/logs/\${SLURM_JOB_ID}"}
JOB
  render stall
  job=$(cd "$work" && cl env PATH="$(dirname "$watch_bin"):$k_job_path" sbatch --parsable stall.slurm)
  [ "$(wait_job_end "$job" 80)" = FAILED ]
  out=$(cat "$work/stall-$job.out")
  grep -Eq "^ddp-watch: verdict: (ranks? [0-9,-]+ on node[][0-9,-]+ printed no stack [^;]*; )?rank 4 on node03 at stall\.py:[0-9]+ in load_batch; " <<<"$out"
  # Rank 4's file has its own stack (faulthandler on its stderr) and no other rank's steps.
  grep -q 'in load_batch' "$work/logs/$job/rank-4.log"
  grep -q '^step [0-9]* time ' "$work/logs/$job/rank-0.log"
  ! grep -q '^step [0-9]* time ' "$work/logs/$job/rank-4.log"
}

@test "sweep: 2 x 2 with parallel 2 runs four tasks with four combinations and checkpoints" {
  cat >"$work/task.sh" <<'SH'
echo "values a=$SWEEP_A b=$SWEEP_B args=$* ckpt=$DDP_CHECKPOINT_DIR"
touch "$DDP_CHECKPOINT_DIR/written"
sleep 2
SH
  cat >"$work/sweep.yaml" <<JOB
name: sweep
nodes: 1
procs_per_node: 1
time: "00:05:00"
launcher: none
script: /bin/bash
args: ["$work/task.sh", "\${SWEEP_A}", "\${SWEEP_B}"]
output: $work/sweep-%A_%a.out
checkpoint: {dir: "$work/ckpt/\${SLURM_ARRAY_TASK_ID}"}
logs: {dir: "$work/logs/\${SLURM_ARRAY_JOB_ID}_\${SLURM_ARRAY_TASK_ID}"}
sweep:
  parameters: {a: [one, "two words"], b: ["x'y", "\$HOME"]}
  parallel: 2
JOB
  render sweep
  grep -qx '#SBATCH --array=0-3%2' "$work/sweep.slurm"
  submit sweep
  cl scontrol show job "$job" | grep -q 'ArrayTaskThrottle=2'
  # Two tasks at once, the others waiting for them (JobArrayTaskLimit, once Slurm says why).
  [ "$(cl squeue -h -r -j "$job" -t RUNNING -o %i | wc -l)" -le 2 ]
  for t in 0 1 2 3; do
    [ "$(wait_job_end "${job}_$t" 30)" = COMPLETED ]
  done
  cat "$work"/sweep-"$job"_*.out
  # Four tasks, four distinct combinations, each its own checkpoint directory; the values
  # arrive as written, a quote and a $ included.
  values=$(grep -h '^values ' "$work"/sweep-"$job"_*.out | sort)
  [ "$(wc -l <<<"$values")" -eq 4 ]
  [ "$(sed 's/ ckpt=.*//' <<<"$values" | sort -u | wc -l)" -eq 4 ]
  grep -qxF "values a=one b=x'y args=one x'y ckpt=$work/ckpt/0" <<<"$values"
  grep -qxF "values a=one b=\$HOME args=one \$HOME ckpt=$work/ckpt/1" <<<"$values"
  grep -qxF "values a=two words b=x'y args=two words x'y ckpt=$work/ckpt/2" <<<"$values"
  grep -qxF "values a=two words b=\$HOME args=two words \$HOME ckpt=$work/ckpt/3" <<<"$values"
  [ "$(find "$work/ckpt" -name written | wc -l)" -eq 4 ]
  # launcher none: each task's one command wrote its own rank-0.log, whole.
  for t in 0 1 2 3; do
    [ "$(cat "$work/logs/${job}_$t/rank-0.log")" = "$(grep '^values ' "$work/sweep-${job}_$t.out")" ]
  done
  # ddpgen status of the array lists every task's state and values.
  sweep_status=$(cl env PATH="$k_job_path" "$DDPGEN" status "$job")
  echo "$sweep_status"
  grep -qE "^    0  COMPLETED on node0[1-3]  a=one b=x'y\$" <<<"$sweep_status"
  grep -qE '^    1  COMPLETED on node0[1-3]  a=one b=\$HOME$' <<<"$sweep_status"
  grep -qE "^    2  COMPLETED on node0[1-3]  a=two words b=x'y\$" <<<"$sweep_status"
  grep -qE '^    3  COMPLETED on node0[1-3]  a=two words b=\$HOME$' <<<"$sweep_status"
}

@test "sweep: an output named by the sweep's values holds its task's lines; ddpgen logs finds it" {
  cat >"$work/task.sh" <<'SH'
echo "values a=$SWEEP_A b=$SWEEP_B"
echo "stderr a=$SWEEP_A b=$SWEEP_B" >&2
SH
  cat >"$work/named.yaml" <<JOB
name: sweep-named
nodes: 1
procs_per_node: 1
time: "00:05:00"
launcher: none
script: /bin/bash
args: ["$work/task.sh"]
output: "$work/\${SWEEP_A}-\${SWEEP_B}/task-%a.out"
sweep:
  parameters: {a: [one, "two words"], b: [x, y]}
  parallel: 2
JOB
  render named
  # sbatch's own file is named by the array task, beside the first directory a value names.
  grep -qxF "#SBATCH --output=$work/%x-%A_%a.out" "$work/named.slurm"
  submit named
  for t in 0 1 2 3; do
    [ "$(wait_job_end "${job}_$t" 30)" = COMPLETED ]
  done
  local t dir
  for t in 0 1 2 3; do
    case $t in 0) dir="one-x" ;; 1) dir="one-y" ;; 2) dir="two words-x" ;; 3) dir="two words-y" ;; esac
    echo "task $t:"; cat "$work/sweep-named-${job}_$t.out" "$work/$dir/task-$t.out"
    # sbatch's file: the one line saying where the output went; that file: the task's own two
    # lines, stderr with stdout, and nothing else.
    [ "$(cat "$work/sweep-named-${job}_$t.out")" = "ddpgen: output continues in $work/$dir/task-$t.out" ]
    [ "$(wc -l <"$work/$dir/task-$t.out")" -eq 2 ]
    grep -qxF "values a=${dir%-*} b=${dir##*-}" "$work/$dir/task-$t.out"
    grep -qxF "stderr a=${dir%-*} b=${dir##*-}" "$work/$dir/task-$t.out"
  done
  # ddpgen logs of a task, from another directory, shows both files.
  logs=$(cd / && cl env PATH="$k_job_path" "$DDPGEN" logs "${job}_2")
  echo "$logs"
  grep -qxF "ddpgen: output continues in $work/two words-x/task-2.out" <<<"$logs"
  grep -qxF "values a=two words b=x" <<<"$logs"
}
