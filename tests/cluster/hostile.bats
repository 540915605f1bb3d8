#!/usr/bin/env bats
# ddp-watch --heal against hostile input on the embedded cluster (3 nodes, one task each): what
# the program prints, a forged suspect line beside a real preflight, records planted where the
# heal record goes, silence that is not silence, and a process that claims to be one of the
# step's. Each hostile case ends with no node named or excluded (--heal-max 0: a node named would
# be logged "named NODE", none must be) and no process outside the step signalled; the controls
# show that a real hang is still ended and a real bar is not.
#
# Needs: the cluster, python3, ddp-watch and ddp-check ($DDP_WATCH_BIN, $DDP_CHECK_BIN, else the
# build's). Missing ones skip, visibly.

bats_require_minimum_version 1.5.0
load lib

k_job_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

setup() {
  skip_unless_cluster
  command -v python3 >/dev/null || skip "python3 missing"
  watch_bin=${DDP_WATCH_BIN:-$REPO/build/contrib/ddp-watch/ddp-watch}
  check_bin=${DDP_CHECK_BIN:-$REPO/build/contrib/ddp-check/ddp-check}
  [[ -x $watch_bin ]] || skip "ddp-watch not built (cmake --build build) and DDP_WATCH_BIN unset"
  [[ -x $check_bin ]] || skip "ddp-check not built (cmake --build build) and DDP_CHECK_BIN unset"
  work=$(mktemp -d /tmp/ddp-hostile.XXXXXX)
}

teardown() {
  [[ -n ${job:-} ]] && cl scancel "$job" 2>/dev/null
  [[ -n ${work:-} ]] && rm -rf "$work"
}

# submit BODY: a 3-node job, one task per node, whose script is BODY after a heal() helper:
# `heal REC COMMAND...` runs COMMAND under ddp-watch --heal REC --heal-max 0 and echoes its
# status. Sets $job; the output goes to $work/job.out.
submit() {
  cat >"$work/job.sh" <<JOB
#!/bin/bash
#SBATCH --nodes=3 --ntasks-per-node=1 --time=5:00
#SBATCH --output=$work/job.out
heal() {
  local rec=\$1
  shift
  local status=0
  $watch_bin --timeout 60s --heal "\$rec" --heal-max 0 -- "\$@" || status=\$?
  echo "status \$status"
}
$1
JOB
  job=$(cd "$work" && cl env PATH="$k_job_path" sbatch --parsable job.sh)
}

# write_hang_py: $work/hang.py, a program that prints one line and then sleeps for 10 minutes.
write_hang_py() {
  cat >"$work/hang.py" <<'EOF2'
import time
print("started", flush=True)
time.sleep(600)
EOF2
}

# run_job_sh: submits $work/job.sh, waits for its end and shows its output; sets $job, $state.
run_job_sh() {
  job=$(cd "$work" && cl env PATH="$k_job_path" sbatch --parsable job.sh)
  state=$(wait_job_end "$job" 240)
  cut -c1-300 "$work/job.out"
  echo "job $job ended $state"
}

# ended: waits for $job, shows its output, and checks that no node was named or excluded.
ended_naming_none() {
  local state
  state=$(wait_job_end "$job" 240)
  cut -c1-300 "$work/job.out"
  echo "job $job ended $state"
  [ "$(cl scontrol show job -o "$job" | grep -oE ' ExcNodeList=[^ ]*' | cut -d= -f2)" = "(null)" ]
  if grep -E '^ddp-watch: heal: (named|excluding)|scontrol update' "$work/job.out"; then
    return 1
  fi
}

@test "Slurm lines, torchrun tables, suspect lines and a flood line printed by the program name no node" {
  cat >"$work/forge.py" <<'EOF2'
import os, sys
rank = int(os.environ["SLURM_PROCID"])
if rank == 1:
    e = sys.stderr
    e.write("srun: error: Node failure on node02\n")
    e.write("srun: error: node02: task 1: Bus error\n")
    e.write("srun: error: Task launch for StepId=1.0 failed on node node03: x\n")
    e.write("x\rsrun: error: Node failure on node03\n")
    e.write("y" * 5000 + "srun: error: Node failure on node02\n")
    e.write("srun: error: Node failure on n[000000-099999]\n")
    e.write("Root Cause (first observed failure):\n[0]:\n  host      : node03\n"
            "  rank      : 2 (local_rank: 0)\n  exitcode  : -7 (pid: 42)\n=====\n")
    print("ddp-check: suspect node02: slow: forged", flush=True)
    e.flush()
sys.exit(1)
EOF2
  submit "heal $work/rec srun python3 $work/forge.py"
  ended_naming_none
  grep -qx "status 1" "$work/job.out"
  grep -qx "ddp-watch: heal: not blaming a node: no node was named; not requeueing: restarted 0 time(s), the cap (heal.max_requeues: 0)" "$work/job.out"
  [ ! -e "$work/rec" ]  # removed: the job ended under ddp-watch
}

@test "a suspect line forged beside a real preflight names no node" {
  # Tasks 1 and 2 print suspect lines, task 0 quotes one; ddp-check itself passes, the wrapper
  # then fails the step.
  # shellcheck disable=SC2016  # expanded by the task's shell
  submit "heal $work/rec srun --ddp bash -c '
    if [ \"\$SLURM_PROCID\" = 0 ]; then echo \"ddp-check: REFUSED 10.1.1.1:9: ddp-check: suspect node02: slow: forged\"; fi
    if [ \"\$SLURM_PROCID\" != 0 ]; then echo \"ddp-check: suspect node03: unreachable: forged\"; fi
    \"\$@\"; exit 1' forge $check_bin --timeout 20"
  ended_naming_none
  grep -qE "^ddp-check: OK: 3 ranks on 3 nodes" "$work/job.out"
  grep -qx "ddp-check: suspect node03: unreachable: forged" "$work/job.out"
  grep -qx "ddp-watch: heal: not blaming a node: no node was named; not requeueing: restarted 0 time(s), the cap (heal.max_requeues: 0)" "$work/job.out"
}

@test "records planted as a symlink, a FIFO and a character device: not followed, not blocking, not read" {
  echo precious >"$work/precious"
  ln -s "$work/precious" "$work/link"
  mkfifo "$work/fifo"
  # The record is the device itself, so that the check for a regular file is what refuses it
  # (a link to /dev/zero is refused as a link). A node of its own, /dev/zero's numbers (1:5),
  # not /dev/zero: the job runs as root and removes its record at the end.
  mknod "$work/zero" c 1 5 || skip "mknod refused here: no character device to plant"
  submit "heal $work/link srun false
heal $work/fifo srun false
heal $work/zero srun false"
  ended_naming_none
  [ "$(grep -c '^status 1$' "$work/job.out")" -eq 3 ]
  grep -qx "ddp-watch: heal: $work/link: a symbolic link, not followed; starting a new record" "$work/job.out"
  grep -qx "ddp-watch: heal: $work/fifo: not a regular file, not read; starting a new record" "$work/job.out"
  grep -qx "ddp-watch: heal: $work/zero: not a regular file, not read; starting a new record" "$work/job.out"
  [ "$(cat "$work/precious")" = precious ]
  # The job ended under ddp-watch: what was planted at the record's name is gone.
  [ ! -e "$work/link" ]
  [ ! -e "$work/fifo" ]
  [ ! -e "$work/zero" ]
}

@test "a bar at one step a second with a 20 s timeout is not a stall; a true hang still is" {
  cat >"$work/bar.py" <<'EOF2'
import sys, time
# Redrawn in place, 12 bytes a step: 45 steps stay under slurmstepd's 1 KiB, so nothing
# reaches srun before the newline at the end.
for i in range(45):
    sys.stderr.write("\r%3d/45 |##|" % i)
    sys.stderr.flush()
    time.sleep(1)
sys.stderr.write("\n")
print("bar done", flush=True)
EOF2
  write_hang_py
  cat >"$work/job.sh" <<JOB
#!/bin/bash
#SBATCH --nodes=3 --ntasks-per-node=1 --time=5:00
#SBATCH --output=$work/job.out
start=\$SECONDS
$watch_bin --timeout 20s --grace 5s --stacks $work/stacks.txt -- srun python3 $work/bar.py
echo "bar status \$? after \$((SECONDS - start)) s"
start=\$SECONDS
$watch_bin --timeout 20s --grace 5s --stacks $work/stacks.txt -- srun python3 $work/hang.py
echo "hang status \$? after \$((SECONDS - start)) s"
JOB
  run_job_sh
  grep -qE "^bar status 0 after (4[5-9]|[5-9][0-9]) s$" "$work/job.out"
  [ "$(grep -c '^bar done$' "$work/job.out")" -eq 3 ]
  grep -qx "ddp-watch: no output for 20 s, but the step's processes wrote since the last look (a line held back by slurmstepd, a progress bar): not a stall" "$work/job.out"
  # The hang: stalled after the timeout and a probe, ended after the grace (exit 124).
  grep -qx "ddp-watch: no progress for 20 s (no output): asking every task for its stack" "$work/job.out"
  local spent
  spent=$(sed -n 's/^hang status 124 after \([0-9]*\) s$/\1/p' "$work/job.out")
  [ -n "$spent" ]
  ((spent >= 20 && spent <= 90))
}

@test "a process outside the step that carries the step's ids is never stopped or signalled" {
  # The decoy sets the step's job, step, node and a rank in its own environment, on the node
  # of task 0, as any process of the user (or a second cluster on the machine) can. Only the
  # processes the step's slurmstepd tracks are the step's.
  write_hang_py
  cat >"$work/job.sh" <<JOB
#!/bin/bash
#SBATCH --nodes=3 --ntasks-per-node=1 --time=5:00
#SBATCH --output=$work/job.out
env SLURM_STEP_ID=0 RANK=0 SLURM_PROCID=0 python3 -c 'import time; time.sleep(300)' &
decoy=\$!
$watch_bin --timeout 20s --grace 5s --stacks $work/stacks.txt -- srun python3 $work/hang.py
echo "hang status \$?"
echo "decoy state \$(awk '/^State:/ {print \$2}' /proc/\$decoy/status)"
kill \$decoy
JOB
  run_job_sh
  # The step was ended as a stall, with each of its three ranks' stacks; the decoy sleeps on.
  grep -qx "hang status 124" "$work/job.out"
  [ "$(grep -c '^=== task [0-2][,:] ' "$work/stacks.txt")" -eq 3 ]
  grep -qx "decoy state S" "$work/job.out"
}

@test "heal's requeue waits for the job script's last lines (--heal-defer, --heal-requeue)" {
  cat >"$work/job.sh" <<JOB
#!/bin/bash
#SBATCH --nodes=3 --ntasks-per-node=1 --time=5:00 --requeue
#SBATCH --output=$work/job.out --open-mode=append
rec=$work/rec
status=0
$watch_bin --timeout 60s --heal "\$rec" --heal-max 2 --heal-defer -- srun false || status=\$?
sleep 2
echo "post ran in run \${SLURM_RESTART_COUNT:-0} after status \$status"
$watch_bin --heal-requeue "\$rec" || true
echo "end of run \${SLURM_RESTART_COUNT:-0}"
exit \$status
JOB
  run_job_sh
  [ "$state" = FAILED ]
  [ "$(cl scontrol show job -o "$job" | grep -oE ' Restarts=[0-9]+' | cut -d= -f2)" = 1 ]
  grep -qx "ddp-watch: heal: the requeue waits for the end of the job script (ddp-watch --heal-requeue)" "$work/job.out"
  # Run 0's last lines ran before its requeue; run 1 failed for good and ended on its own.
  grep -qx "post ran in run 0 after status 1" "$work/job.out"
  # Slurm's requeue cancels the batch step when it finds run 0's script still running (a
  # "CANCELLED AT ... DUE TO JOB REQUEUE" line); the script may also have ended first. Either
  # way the post line came before any cancel line, and before run 1's.
  local post cancel run1
  post=$(grep -n -m1 'post ran in run 0' "$work/job.out" | cut -d: -f1)
  cancel=$(grep -n -m1 'CANCELLED AT .* DUE TO JOB REQUEUE' "$work/job.out" | cut -d: -f1)
  run1=$(grep -n -m1 'post ran in run 1' "$work/job.out" | cut -d: -f1)
  [ "$post" -lt "$run1" ]
  [ -z "$cancel" ] || [ "$post" -lt "$cancel" ]
  grep -qx "post ran in run 1 after status 1" "$work/job.out"
  grep -qx "end of run 1" "$work/job.out"
  [ ! -e "$work/rec" ]
}
