#!/usr/bin/env bats
# Requeue of ddpgen scripts on the embedded cluster, with the real sbatch, scontrol and
# signals: the notice file that tells the program to save (no signal reaches it), a resumed
# run equal bit for bit to an uninterrupted one, job arrays (one task's signal requeues that
# task only), the restart cap (checkpoint.max_restarts), and requeue after a crash
# (checkpoint.requeue_on_failure) but never after a cancellation.
#
# Needs: the cluster (cluster.sh up --plugin ...spank_ddp.so), ddpgen, and for the training
# test Debian's python3-torch. Missing ones skip, visibly.

bats_require_minimum_version 1.5.0
load lib

k_examples=$REPO/contrib/examples
k_job_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

setup() {
  # Every node sees the same /tmp: logs, checkpoints and the notice file live here.
  work=$(mktemp -d /tmp/ddp-requeue.XXXXXX)
}

teardown() {
  rm -rf "$work"
}

need_all() {
  skip_unless_cluster
  need_ddpgen
}

# A program without torch: prints its restart, then runs until it sees the requeue notice
# (exits 0) or for $SECONDS_TO_RUN seconds; exits with $FAIL_ON_RESTART_<N> when set for this
# restart.
write_sleeper() {
  cat >"$work/sleeper.py" <<'EOF'
import os, sys, time
restart = os.environ.get("SLURM_RESTART_COUNT", "0")
task = os.environ.get("SLURM_ARRAY_TASK_ID", "-")
print(f"sleeper task {task} restart {restart} notice {os.environ.get('DDP_REQUEUE_NOTICE', '')}",
      flush=True)
fail = os.environ.get("FAIL_ON_RESTART_" + restart, os.environ.get("FAIL_ALWAYS", ""))
if fail:
    print(f"sleeper failing with {fail}", flush=True)
    sys.exit(int(fail))
deadline = time.monotonic() + float(sys.argv[1])
while time.monotonic() < deadline:
    if os.path.exists(os.environ["DDP_REQUEUE_NOTICE"]):
        print("sleeper saw the notice, stopping", flush=True)
        sys.exit(0)
    time.sleep(0.2)
print("sleeper done", flush=True)
EOF
}

# render_sleeper SECONDS [--set ...]: a one-node, one-task job running sleeper.py.
render_sleeper() {
  local seconds=$1
  shift
  write_sleeper
  cat >"$work/job.yaml" <<EOF
name: requeue-test
nodes: 1
procs_per_node: 1
time: "10:00"
launcher: srun
script: $work/sleeper.py
args: ["$seconds"]
checkpoint: {dir: $work/ckpt, requeue: true}
output: $work/job-%j.out
EOF
  "$DDPGEN" --profile local "$work/job.yaml" -o "$work/job.slurm" "$@"
}

submit() {
  (cd "$work" && cl env PATH="$k_job_path" "$@" sbatch --parsable job.slurm)
}

# restarts JOBID: the job's Restarts count.
restarts() {
  cl scontrol show job -o "$1" | grep -o 'Restarts=[0-9]*' | cut -d= -f2
}

# wait_line FILE REGEX [TIMEOUT]: waits until a line of FILE matches.
wait_line() {
  local deadline=$((SECONDS + ${3:-90}))
  until [[ -f $1 ]] && grep -Eq -- "$2" "$1"; do
    if ((SECONDS >= deadline)); then
      echo "no line matching '$2' in $1 after ${3:-90}s" >&2
      [[ -f $1 ]] && cat "$1" >&2
      return 1
    fi
    sleep 0.5
  done
}

@test "requeue notice: the program saves mid-epoch, resumes there, and equals an uninterrupted run bit for bit" {
  slurm_side_covered_by "the job-array and max_restarts cases here (SIGUSR1 to the batch shell, the trap's requeue, the restart count) and e2e.bats' \"srun launcher\" (the training step)"
  need_all
  need_torch
  local common=(--set "script=$k_examples/autoencoder.py" --set "output=$work/job-%j.out")
  # The uninterrupted run.
  "$DDPGEN" --profile local "$k_examples/autoencoder-srun.yaml" -o "$work/job.slurm" \
    "${common[@]}" --set "checkpoint.dir=$work/straight" --set 'args=[--epochs, "3"]'
  straight=$(submit)
  wait_job "$straight" 150
  # The same training, slowed down so that the warning signal lands inside an epoch.
  "$DDPGEN" --profile local "$k_examples/autoencoder-srun.yaml" -o "$work/job.slurm" \
    "${common[@]}" --set "checkpoint.dir=$work/stopped" \
    --set 'args=[--epochs, "3", --step-sleep, "0.4"]'
  id=$(submit)
  wait_line "$work/job-$id.out" '^epoch 1/3 ' 120
  cl scancel --batch --signal=USR1 "$id"
  wait_job "$id" 180
  log=$(cat "$work/job-$id.out")
  echo "$log"
  grep -q "^ddpgen: SIGUSR1: asking the program to save and stop " <<<"$log"
  grep -q "^ddpgen: SIGUSR1: requeueing job $id$" <<<"$log"
  # The notice's checkpoint is inside an epoch (batch > 0), not the last periodic one
  # (written at epoch ends), and the next run starts exactly there.
  [[ $log =~ requeue\ notice:\ saved\ at\ epoch\ ([0-9]+)\ batch\ ([0-9]+),\ stopping ]]
  epoch=${BASH_REMATCH[1]} batch=${BASH_REMATCH[2]}
  ((epoch >= 1 && batch > 0))
  [ "$(grep -c "^resumed from epoch $epoch batch $batch$" <<<"$log")" -eq 1 ]
  [ "$(restarts "$id")" = 1 ]
  run compare_checkpoints "$work/straight/autoencoder.pt" "$work/stopped/autoencoder.pt"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "epochs 3 3 losses same weights same" ]
}

@test "job array: a signal to one task requeues that task only" {
  need_all
  render_sleeper 60 --set "output=$work/job-%A_%a.out"
  array=$(cd "$work" && cl env PATH="$k_job_path" sbatch --parsable --array=0-1 job.slurm)
  wait_line "$work/job-${array}_0.out" "^sleeper task 0 restart 0 " 60
  wait_line "$work/job-${array}_1.out" "^sleeper task 1 restart 0 " 60
  cl scancel --batch --signal=USR1 "${array}_1"
  wait_line "$work/job-${array}_1.out" "^sleeper task 1 restart 1 " 90
  grep -q "^ddpgen: SIGUSR1: requeueing job ${array}_1$" "$work/job-${array}_1.out"
  # Task 0 ran on, untouched: never requeued, never told to stop.
  [ "$(restarts "${array}_0")" = 0 ]
  [ "$(restarts "${array}_1")" = 1 ]
  [ "$(job_state "${array}_0")" = RUNNING ]
  cat "$work/job-${array}_0.out"
  run grep -E 'requeueing|asking the program|saw the notice' "$work/job-${array}_0.out"
  [ "$status" -eq 1 ]
  cl scancel "$array"
}

@test "checkpoint.max_restarts: after the cap the job ends with a clear line, not another requeue" {
  need_all
  render_sleeper 120 --set checkpoint.max_restarts=1
  grep -q 'checkpoint.max_restarts: 1' "$work/job.slurm"
  id=$(submit)
  wait_line "$work/job-$id.out" "^sleeper task - restart 0 " 60
  cl scancel --batch --signal=USR1 "$id"
  wait_line "$work/job-$id.out" "^sleeper task - restart 1 " 90
  cl scancel --batch --signal=USR1 "$id"
  state=$(wait_job_end "$id" 60)
  cat "$work/job-$id.out"
  [ "$state" = FAILED ]
  [ "$(restarts "$id")" = 1 ]
  [ "$(grep -c "^ddpgen: SIGUSR1: requeueing job $id$" "$work/job-$id.out")" -eq 1 ]
  grep -q "^ddpgen: SIGUSR1: not requeueing job $id: it has restarted 1 times, the limit (checkpoint.max_restarts: 1)$" "$work/job-$id.out"
  # The program was still told to save and stop, both times.
  [ "$(grep -c '^sleeper saw the notice, stopping$' "$work/job-$id.out")" -eq 2 ]
}

@test "checkpoint.requeue_on_failure: a crashed run is requeued up to max_restarts, then fails" {
  need_all
  render_sleeper 1 --set checkpoint.requeue_on_failure=true --set checkpoint.max_restarts=2
  id=$(submit FAIL_ALWAYS=3)
  state=$(wait_job_end "$id" 150)
  cat "$work/job-$id.out"
  [ "$state" = FAILED ]
  [ "$(restarts "$id")" = 2 ]
  [ "$(grep -c '^sleeper failing with 3$' "$work/job-$id.out")" -eq 3 ]
  [ "$(grep -c "^ddpgen: the program failed (status 3): requeueing job $id$" "$work/job-$id.out")" -eq 2 ]
  grep -q "^ddpgen: the program failed (status 3): not requeueing job $id: it has restarted 2 times, the limit (checkpoint.max_restarts: 2)$" "$work/job-$id.out"
  cl scontrol show job -o "$id" | grep -q 'ExitCode=3:0'
}

@test "checkpoint.requeue_on_failure: a run that fails once is retried and completes" {
  need_all
  render_sleeper 1 --set checkpoint.requeue_on_failure=true
  id=$(submit FAIL_ON_RESTART_0=4)
  wait_job "$id" 120
  cat "$work/job-$id.out"
  [ "$(restarts "$id")" = 1 ]
  grep -q "^ddpgen: the program failed (status 4): requeueing job $id$" "$work/job-$id.out"
  grep -q '^sleeper done$' "$work/job-$id.out"
}

@test "checkpoint.requeue_on_failure: a cancelled job is not requeued" {
  need_all
  render_sleeper 120 --set checkpoint.requeue_on_failure=true
  id=$(submit)
  wait_line "$work/job-$id.out" "^sleeper task - restart 0 " 60
  cl scancel "$id"
  state=$(wait_job_end "$id" 60)
  [ "$state" = CANCELLED ]
  sleep 3
  [ "$(job_state "$id")" = CANCELLED ]
  [ "$(restarts "$id")" = 0 ]
  run grep -c 'requeueing' "$work/job-$id.out"
  [ "$output" = 0 ]
}
