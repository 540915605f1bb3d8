#!/usr/bin/env bats
# ddp-watch around training programs as users write them (stall.py, 2 nodes x 2 ranks, gloo):
#   - a tqdm progress bar, which redraws with a carriage return and writes no newline until it
#     ends, is progress: a healthy run longer than the timeout is not called stalled;
#   - a DataLoader with 2 worker processes per rank: exactly one dump per rank, from its main
#     process, and the stuck rank named;
#   - torchrun with a worker that is no longer Python (it became /bin/sleep): that rank is named
#     as printing no stack, with its node, and no other rank's dump is put on it;
#   - torchrun in a job array: the stacks are captured (the step has the array's name there).
# Each test costs about 25-45 s on 2 cores (torch imports, then timeout + grace).
#
#   - the helper step cannot start (an srun that hangs on --overlap): the step is signalled
#     instead, the kill stays on time, and DataLoader workers that dumped are set apart;
#   - srun told to write the output to a file: the file's growth is progress.
# Needs: the cluster, Debian's python3-torch and python3-tqdm, ddp-watch ($DDP_WATCH_BIN or the
# build's). Missing ones skip, visibly.

bats_require_minimum_version 1.5.0
load lib

k_stall_py=$REPO/tests/cluster/stall.py
k_job_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

setup() {
  skip_unless_cluster
  need_torch
  watch_bin=${DDP_WATCH_BIN:-$REPO/build/contrib/ddp-watch/ddp-watch}
  [[ -x $watch_bin ]] || skip "ddp-watch not built (cmake --build build) and DDP_WATCH_BIN unset"
  work=$(mktemp -d /tmp/ddp-watch-real.XXXXXX)
}

teardown() {
  [[ -n ${work:-} ]] && rm -rf "$work"
}

# submit TIMEOUT SBATCH_OPTIONS LAUNCH_LINE...: a 2-node job that runs ddp-watch --timeout
# TIMEOUT around LAUNCH_LINE and prints "watch exit N" when it returns. Prints the job id.
# $startup (default 120s) is ddp-watch's --startup; $path_first a folder put first on PATH.
submit() {
  local timeout=$1 options=$2
  shift 2
  cat >"$work/job.sh" <<JOB
#!/bin/bash
#SBATCH --nodes=2 --ntasks-per-node=2 --time=5:00 --output=$work/job-%j.out $options
export OMP_NUM_THREADS=1
# torch 1.13 on Python 3.11 needs these for torchrun (site-profiles/local.yaml).
export PET_REDIRECTS=1 PET_TEE=1
${path_first:+export PATH=$path_first:\$PATH}
status=0
$watch_bin --timeout $timeout --startup ${startup:-120s} --grace 10s --stacks $work/stacks.txt -- $* || status=\$?
echo "watch exit \$status"
exit \$status
JOB
  (cd "$work" && cl env PATH="$k_job_path" sbatch --parsable job.sh)
}

# The job's log ($log; carriage returns as newlines), after it ended in state $2; $3 names the
# log when it is not job-ID.out.
finished() {
  local state
  state=$(wait_job_end "$1" 240)
  log=$(tr '\r' '\n' <"$work/${3:-job-$1.out}")
  grep -v -e '^step ' -e '%|' <<<"$log" | cut -c1-300
  echo "job $1 ended $state"
  [ "$state" = "$2" ]
}

need_tqdm() {
  /usr/bin/python3 -c 'import tqdm' 2>/dev/null ||
    skip "Debian's python3-tqdm is not installed (bash contrib/install-deps.sh)"
}

# Without srun between them, the bar's bytes reach ddp-watch as they are written: each is
# progress, though no line ends for the whole run.
@test "a tqdm bar is progress: a healthy torchrun twice the timeout is left alone" {
  need_tqdm
  id=$(submit 15s "" torchrun --standalone --nproc_per_node=2 "$k_stall_py" --steps 60 --step-sleep 0.5 --bar)
  finished "$id" COMPLETED
  grep -q '^watch exit 0$' <<<"$log"
  grep -q "training world 2$" <<<"$log"
  grep -q "done 60 steps world 2$" <<<"$log"
  grep -q '100%|.*| 60/60 ' <<<"$log"
  [ "$(grep -c 'ddp-watch' <<<"$log")" -eq 0 ]
  [ ! -e "$work/stacks.txt" ]
}

# slurmstepd holds the bar's last redraw (no newline yet) and sends it with the dump's first
# line after it: rank 0's dump must still be read, and rank 0 seen waiting.
@test "a tqdm bar then a stall: the dump glued to the bar is read, the stuck rank named" {
  need_tqdm
  id=$(submit 8s "" srun --ddp /usr/bin/python3 "$k_stall_py" --steps 100000 --bar --hang-rank 3 --at-step 5)
  finished "$id" FAILED
  grep -q '^watch exit 124$' <<<"$log"
  grep -Eq '^ddp-watch: verdict: rank 3 on node02 at stall\.py:[0-9]+ in load_batch; ranks 0-2 on node\[01-02\] wait in ' <<<"$log"
  grep -q '^=== task 0, rank 0, node node01, waits in ' "$work/stacks.txt"
  # The bar's last redraw came with the dump, after the stack request: it is in the output.
  sed -n '/^ddp-watch: no progress for /,$p' <<<"$log" | grep -q '%|'
}

# Each rank's DataLoader has 2 worker processes; signalled as a whole, they would dump into
# their rank's output at the same moment. Only the ranks' own processes dump, one each.
@test "DataLoader workers: one dump per rank, from the rank's process; the stuck rank named" {
  id=$(submit 10s "" srun --ddp /usr/bin/python3 "$k_stall_py" --steps 100000 --loader-workers 2 --hang-rank 3 --at-step 10)
  finished "$id" FAILED
  grep -q '^watch exit 124$' <<<"$log"
  grep -Eq '^ddp-watch: verdict: rank 3 on node02 at stall\.py:[0-9]+ in load_batch; ranks 0-2 on node\[01-02\] wait in ' <<<"$log"
  [ "$(grep -c '^Fatal Python error: Aborted$' "$work/stacks.txt")" -eq 4 ]
  [ "$(grep -c '^=== task ' "$work/stacks.txt")" -eq 4 ]
}

# Rank 2, the first worker of node02, becomes /bin/sleep: it prints no stack. Rank 3's dump
# must stay rank 3's (by position it went to rank 2, and rank 2 was said to wait).
@test "torchrun: a worker that is no longer Python is named silent with its node" {
  id=$(submit 10s "" srun --ddp=torchrun --ntasks=2 --ntasks-per-node=1 \
    torchrun --nproc_per_node=2 "$k_stall_py" --steps 100000 --exec-rank 2 --at-step 10)
  finished "$id" FAILED
  grep -q '^watch exit 124$' <<<"$log"
  grep -Eq '^ddp-watch: verdict: rank 2 on node02 printed no stack \(stuck in the kernel or a device, or not Python\); ranks 0,1,3 on node\[01-02\] wait in ' <<<"$log"
}

# In a job array squeue names the step ARRAYJOB_TASK.STEP; the helper must still find it.
@test "torchrun in a job array: the stacks are captured and the stuck worker named" {
  id=$(submit 10s "--array=1" srun --ddp=torchrun --ntasks=2 --ntasks-per-node=1 \
    torchrun --nproc_per_node=2 "$k_stall_py" --steps 100000 --hang-rank 3 --at-step 10)
  finished "$id" FAILED  # one task: its own job id is the array's
  grep -q '^watch exit 124$' <<<"$log"
  grep -Eq '^ddp-watch: verdict: rank 3 on node02 at stall\.py:[0-9]+ in load_batch; ' <<<"$log"
}

# The helper step never starts (srun --overlap hangs, as on a controller that cannot schedule
# it): after half the grace the step is signalled as a whole, and ddp-watch still ends it on
# time. (Signalled as a whole, a rank's DataLoader workers would dump into its stream at the
# same moment, mid-line: that is why the helper exists; the unit tests label such dumps.)
@test "the helper step cannot start: the step is signalled instead and ended on time" {
  mkdir -p "$work/fake"
  cat >"$work/fake/srun" <<'SRUN'
#!/bin/sh
case " $* " in *" --overlap "*) exec sleep 600 ;; esac
exec /usr/bin/srun "$@"
SRUN
  chmod +x "$work/fake/srun"
  path_first=$work/fake
  id=$(submit 10s "" /usr/bin/srun --ddp /usr/bin/python3 "$k_stall_py" --steps 100000 \
    --hang-rank 3 --at-step 10)
  finished "$id" FAILED
  grep -q '^ddp-watch: the helper step could not freeze the step in time: signalling the step instead$' <<<"$log"
  grep -q '^watch exit 124$' <<<"$log"
  grep -Eq '^ddp-watch: verdict: rank 3 on node02 at stall\.py:[0-9]+ in load_batch; ranks 0-2 on node\[01-02\] wait in ' <<<"$log"
  [ "$(grep -c '^Fatal Python error: Aborted$' "$work/stacks.txt")" -eq 4 ]
}

# srun -o FILE: the step's output goes to the file, never through ddp-watch; the file growing
# is progress, so a healthy run is not called stalled. The run (70 s of steps after the imports)
# outlasts the startup allowance, so a watcher blind to the file would call it stalled; the
# allowance covers the imports on a loaded machine (over 20 s when the suites run beside each
# other on 2 cores).
@test "srun -o FILE: the file's growth is progress" {
  startup=60s
  id=$(submit 20s "" srun --ddp -o "$work/steps.txt" /usr/bin/python3 "$k_stall_py" --steps 140 --step-sleep 0.5)
  finished "$id" COMPLETED
  grep -q '^watch exit 0$' <<<"$log"
  grep -q 'done 140 steps world 4$' "$work/steps.txt"
  [ "$(grep -c 'ddp-watch' <<<"$log")" -eq 0 ]
}
