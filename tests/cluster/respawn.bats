#!/usr/bin/env bats
# Respawn in the allocation on the embedded cluster: 4 nodes, a job ddpgen renders with
# `nodes: 3, spares: 1` and `heal:`, the example autoencoder with a checkpoint per epoch. A
# fault is injected on node02 and the test reads what ddp-watch and Slurm did:
#   - a rank on node02 dies of SIGBUS at epoch 2: one verdict names node02, ddp-watch starts a
#     new training step on node[01,03-04] in the same job, which resumes from the checkpoint;
#     no requeue (Restarts=0), the job COMPLETED, its weights and losses those of a run without
#     the fault, bit for bit;
#   - Slurm takes node02 down during training (scontrol update State=DOWN): srun's own "Node
#     failure on node02" names it, and the step moves to the spare in the same job;
#   - the SIGBUS case without the plugin: the checks of every node and of the new step's run
#     under the script's per-task setup (ddp-watch --check-wrapper), also with torchrun and a
#     hang;
#   - the same with `spares: 0`: the heal path excludes node02 and requeues, as before;
#   - a program whose rank 1 dies of SIGBUS wherever it runs: one respawn, then ddp-watch says
#     the fault follows the job and the job fails, not requeued;
#   - the ranks on node02 hang (the watchdog's stall path, srun tasks and torchrun): the culprit
#     of the stall is node02, a new step on the spare finishes the job.
# The cluster of the ctest fixture has 3 nodes; setup_file starts it again with 4 (same Slurm,
# same plugin) and teardown_file puts 3 back.
#
# Needs: the cluster with the plugin, Debian's python3-torch, ddpgen, ddp-check and ddp-watch
# ($DDP_CHECK_BIN, $DDP_WATCH_BIN, else the build's). Missing ones skip, visibly.

bats_require_minimum_version 1.5.0
load lib

k_example=$REPO/contrib/examples/autoencoder.py
k_job_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

setup_file() {
  export RESPAWN_RESTORE_NODES=""
  "$CLUSTER" status >/dev/null 2>&1 || return 0
  local nodes
  nodes=$(cat "$DDP_CLUSTER_DIR/nodes" 2>/dev/null || echo 3)
  ((nodes < 4)) || return 0
  [[ -f $DDP_CLUSTER_DIR/lib/spank_ddp.so ]] || return 0
  cp "$DDP_CLUSTER_DIR/lib/spank_ddp.so" "$BATS_FILE_TMPDIR/spank_ddp.so"
  RESPAWN_RESTORE_NODES=$nodes
  cluster_restart 4 "$BATS_FILE_TMPDIR/up4.log"
}

teardown_file() {
  [[ -n ${RESPAWN_RESTORE_NODES:-} ]] || return 0
  cluster_restart "$RESPAWN_RESTORE_NODES" "$BATS_FILE_TMPDIR/up3.log"
}

setup() {
  skip_unless_cluster
  [[ -f $DDP_CLUSTER_DIR/lib/spank_ddp.so ]] || skip "the cluster runs without the plugin"
  (($(cat "$DDP_CLUSTER_DIR/nodes") >= 4)) || skip "the cluster has fewer than 4 nodes"
  need_torch
  need_ddpgen
  watch_bin=${DDP_WATCH_BIN:-$REPO/build/contrib/ddp-watch/ddp-watch}
  check_bin=${DDP_CHECK_BIN:-$REPO/build/contrib/ddp-check/ddp-check}
  [[ -x $watch_bin ]] || skip "ddp-watch not built (cmake --build build) and DDP_WATCH_BIN unset"
  [[ -x $check_bin ]] || skip "ddp-check not built (cmake --build build) and DDP_CHECK_BIN unset"
  work=$(mktemp -d /tmp/ddp-respawn.XXXXXX)
  mkdir "$work/bin"
  ln -s "$check_bin" "$work/bin/ddp-check"
  ln -s "$watch_bin" "$work/bin/ddp-watch"
}

teardown() {
  if [[ -n ${limited:-} ]]; then
    ip netns exec "$(netns "$limited")" tc qdisc del dev eth0 root || true
  fi
  if [[ -n ${downed:-} ]]; then
    cl scontrol update NodeName="$downed" State=RESUME || true
  fi
  if [[ -n ${blackholed:-} ]]; then
    ip netns exec "$(netns "$blackholed")" ip route del blackhole "$SUBNET.11/32" || true
  fi
  [[ -n ${job:-} ]] && cl scancel "$job" 2>/dev/null
  [[ -n ${work:-} ]] && rm -rf "$work"
}

# submit SPARES SCRIPT ARGS [LAUNCHER [STALL]]: renders a 3-node job with SPARES spares, the
# preflight, the watchdog (a stall after STALL, default 60s; 120 s before the first line, since
# torchrun's workers importing torch on a loaded 2-core machine printed nothing for more than
# 10 s; 20 s, ddp-watch's default, for the ranks to print their stacks: a rank that prints none
# in time is named too, and on a loaded 2-core machine 5 s was not always enough) and heal, one rank per node through LAUNCHER
# (default srun), a checkpoint per epoch, and submits it. Sets $job. With $noplugin set, the
# site profile says the plugin is not installed (ddp_plugin: false): each task computes its
# rank with the script's per-task setup.
# preflight=YAML sets the job's preflight ({timeout: 30s} unless set), procs=N its processes per
# node (1 unless set); noplugin=1 renders it for a site without the plugin.
submit() {
  local spares=$1 script=$2 args=$3 launcher=${4:-srun} stall=${5:-60s}
  local preflight_yaml=${preflight:-"{timeout: 30s}"}
  cat >"$work/job.yaml" <<JOB
name: respawn
nodes: 3
spares: $spares
procs_per_node: ${procs:-1}
time: "00:05:00"
launcher: $launcher
python: /usr/bin/python3
script: $script
args: $args
env: {OMP_NUM_THREADS: "1"}
output: $work/job.out
pre: 'echo "run \${SLURM_RESTART_COUNT:-0} on \$SLURM_JOB_NODELIST"'
checkpoint: {dir: $work/ckpt}
preflight: $preflight_yaml
watchdog: {timeout: $stall, startup: 120s, grace: 20s}
heal: {max_requeues: 2}
JOB
  # The local profile's partition holds 3 nodes; this cluster has 4.
  cat >"$work/site.yaml" <<'SITE'
extends: local
partitions:
  replace:
    - {name: debug, max_nodes: 4, max_time: "1:00:00"}
SITE
  [[ -z ${noplugin:-} ]] || echo "ddp_plugin: false" >>"$work/site.yaml"
  "$DDPGEN" --profile "$work/site.yaml" "$work/job.yaml" -o "$work/job.slurm"
  job=$(cd "$work" && cl env PATH="$work/bin:$k_job_path" sbatch --parsable job.slurm)
}

# bus_on NODE LINE: once the job's output has LINE, SIGBUS to the training process on NODE (a
# process in that node's network namespace, of this test's job: its checkpoint dir is $work's).
bus_on() {
  local deadline=$((SECONDS + 180)) pid
  until grep -qx "$2" "$work/job.out" 2>/dev/null; do
    ((SECONDS < deadline)) || { echo "no line \"$2\" in 180 s" >&2; return 1; }
    sleep 0.2
  done
  for pid in $(pgrep -f "python3 $k_example"); do
    [[ $(ip netns identify "$pid" 2>/dev/null) == "$(netns "$1")" ]] || continue
    grep -qz "^DDP_CHECKPOINT_DIR=$work/ckpt$" "/proc/$pid/environ" 2>/dev/null || continue
    kill -BUS "$pid"
    echo "SIGBUS to $pid on $1"
    return 0
  done
  echo "no training process on $1" >&2
  return 1
}

# respawn_time: the time the respawn line gives ("0.04 s"), for the summary's.
respawn_time() {
  sed -nE "s/^ddp-watch: respawn: respawn 1 of .*; the new step started ([0-9.]+ s) after the failed one's srun exited.*$/\\1/p" "$work/job.out"
}

# resumed_once: the 6-epoch example ran twice with 3 ranks, the second start resumed from the
# checkpoint of epoch 2 or 3, every epoch trained once, the ranks' weights equal at the end.
resumed_once() {
  [ "$(grep -c "^start world 3 " "$work/job.out")" -eq 2 ]
  grep -qE "^resumed from epoch [23]$" "$work/job.out"
  local e
  for e in 1 2 3 4 5 6; do
    [ "$(grep -c "^epoch $e/6 loss " "$work/job.out")" -eq 1 ]
  done
  grep -qx "weights identical on 3 ranks" "$work/job.out"
}

# ended STATE: waits for $job to end, shows its output, checks the final state.
ended() {
  local state
  state=$(wait_job_end "$job" 300)
  cut -c1-300 "$work/job.out" | grep -v '^step '
  echo "job $job ended $state"
  [ "$state" = "$1" ]
}

# field NAME: the job's NAME= field (Restarts, ExcNodeList).
field() {
  cl scontrol show job -o "$job" | grep -oE "(^| )$1=[^ ]*" | cut -d= -f2
}

@test "a rank on node02 dies of SIGBUS: a new step on a spare, same job, no requeue" {
  submit 1 "$k_example" '[--epochs, "6", --epoch-sleep, "2"]'
  grep -qx "#SBATCH --nodes=4" "$work/job.slurm"
  bus_on node02 "epoch 2/6 loss .*" || { ended COMPLETED; false; }
  ended COMPLETED
  [ "$(field Restarts)" = 0 ]
  grep -qx "run 0 on node\[01-04\]" "$work/job.out"
  [ "$(grep -c "^run " "$work/job.out")" -eq 1 ]
  # The preflight proved all four nodes, the spare included, and again the new step's three,
  # after the failure and before the respawn line: the line is said once the check passed.
  grep -qE "^ddp-check: OK: 4 ranks on 4 nodes reached " "$work/job.out"
  sed -n '/^ddp-watch: first failure: /,/^ddp-watch: respawn: respawn 1 /p' "$work/job.out" |
    grep -qE "^ddp-check: OK: 3 ranks on 3 nodes reached "
  # One verdict, naming node02; one respawn onto the spare.
  [ "$(grep -c "^ddp-watch: respawn: respawn " "$work/job.out")" -eq 1 ]
  grep -qE "^ddp-watch: respawn: respawn 1 of at most 1: node02 \(hardware-signal\): task 1 died of SIGBUS \(srun: .*\); node\[01-03\] -> node\[01,03-04\]; the new step started [0-9]+\.[0-9]+ s after the failed one's srun exited, its nodes checked in between$" "$work/job.out"
  [ "$(grep -c "requeueing" "$work/job.out")" -eq 0 ]
  # Two starts of 3 ranks, the second resumed from the checkpoint, every epoch printed once.
  resumed_once
  [ "$(tail -n 1 "$work/job.out")" = "ddp-watch: respawn: respawns: 1: node02 (hardware-signal) node[01-03] -> node[01,03-04] started after $(respawn_time)" ]
  # The next case compares its checkpoint with an uninterrupted run's.
  cp -r "$work/ckpt" "$BATS_FILE_TMPDIR/ckpt-respawned"
}

@test "the respawned run ends with the weights and losses of an uninterrupted one, bit for bit" {
  slurm_side_covered_by "\"a rank on node02 dies of SIGBUS\" (the same job, with its respawn)"
  local respawned=$BATS_FILE_TMPDIR/ckpt-respawned/autoencoder.pt
  [[ -f $respawned ]] || { echo "no checkpoint from \"a rank on node02 dies of SIGBUS\" (it failed)"; false; }
  # The same job, uninterrupted (the same seed).
  submit 1 "$k_example" '[--epochs, "6", --epoch-sleep, "2"]'
  ended COMPLETED
  [ "$(grep -c "^ddp-watch: respawn: respawn " "$work/job.out")" -eq 0 ]
  run compare_checkpoints "$work/ckpt/autoencoder.pt" "$respawned"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "epochs 6 6 losses same weights same" ]
}

@test "Slurm takes node02 down during training: its node failure moves the step to the spare, same job" {
  # An administrator's (or a health check's) scontrol update State=DOWN: slurmctld removes the
  # node from the job, which --no-kill keeps running, ends the step's tasks there and tells
  # srun, which prints "Node failure on node02": Slurm's own record, the evidence acted on.
  submit 1 "$k_example" '[--epochs, "6", --epoch-sleep, "2"]'
  grep -qx "#SBATCH --no-kill" "$work/job.slurm"
  local deadline=$((SECONDS + 180))
  until grep -qE "^epoch 2/6 loss " "$work/job.out" 2>/dev/null; do
    ((SECONDS < deadline)) || { ended COMPLETED; false; }
    sleep 0.2
  done
  downed=node02
  cl scontrol update NodeName=node02 State=DOWN Reason="respawn test: node failure"
  ended COMPLETED
  [ "$(field Restarts)" = 0 ]
  [ "$(grep -c "^run " "$work/job.out")" -eq 1 ]
  grep -qE "^srun: error: Node failure on node02$" "$work/job.out"
  [ "$(grep -c "^ddp-watch: respawn: respawn " "$work/job.out")" -eq 1 ]
  grep -qE "^ddp-watch: respawn: respawn 1 of at most 1: node02 \(node-failure\): srun: Node failure on node02; node\[01-03\] -> node\[01,03-04\]; the new step started [0-9]+\.[0-9]+ s after the failed one's srun exited, its nodes checked in between$" "$work/job.out"
  [ "$(grep -c "requeueing" "$work/job.out")" -eq 0 ]
  resumed_once
  [ "$(tail -n 1 "$work/job.out")" = "ddp-watch: respawn: respawns: 1: node02 (node-failure) node[01-03] -> node[01,03-04] started after $(respawn_time)" ]
}

@test "without the plugin: the new step's nodes are checked under the task setup, same job, no requeue" {
  slurm_side_covered_by "\"a rank on node02 dies of SIGBUS\" (the respawned step) and topology.bats (the task setup under this layout)" --unless-topology
  noplugin=1 submit 1 "$k_example" '[--epochs, "6", --epoch-sleep, "2"]'
  # No srun --ddp: ddp-watch checks every node, and a new step's, under the training step's
  # per-task setup (bash -c "$ddpgen_task_setup"... ddpgen-task tasks 1 PORTS: 8 words).
  grep -qE -- "^ddp-watch .* --first-check .*--check-wrapper=8 -- " "$work/job.slurm"
  run grep -E -- "^srun .*--ddp" "$work/job.slurm"
  [ "$status" -eq 1 ]
  bus_on node02 "epoch 2/6 loss .*" || { ended COMPLETED; false; }
  ended COMPLETED
  [ "$(field Restarts)" = 0 ]
  grep -qx "run 0 on node\[01-04\]" "$work/job.out"
  [ "$(grep -c "^run " "$work/job.out")" -eq 1 ]
  # The check of all four nodes before the first step, and of the new step's three after the
  # failure and before the respawn line.
  grep -qE "^ddp-check: OK: 4 ranks on 4 nodes reached " "$work/job.out"
  sed -n '/^ddp-watch: first failure: /,/^ddp-watch: respawn: respawn 1 /p' "$work/job.out" |
    grep -qE "^ddp-check: OK: 3 ranks on 3 nodes reached "
  [ "$(grep -c "^ddp-watch: respawn: respawn " "$work/job.out")" -eq 1 ]
  grep -qE "^ddp-watch: respawn: respawn 1 of at most 1: node02 \(hardware-signal\): task 1 died of SIGBUS \(srun: .*\); node\[01-03\] -> node\[01,03-04\]; the new step started [0-9]+\.[0-9]+ s after the failed one's srun exited, its nodes checked in between$" "$work/job.out"
  [ "$(grep -c "requeueing" "$work/job.out")" -eq 0 ]
  # The new step's ranks, numbered by the setup from its own three nodes, resumed training.
  resumed_once
  [ "$(tail -n 1 "$work/job.out")" = "ddp-watch: respawn: respawns: 1: node02 (hardware-signal) node[01-03] -> node[01,03-04] started after $(respawn_time)" ]
}

@test "a node that cannot reach the head before training: the first step takes the spare, same job, no requeue" {
  slurm_side_covered_by "\"a node behind a bandwidth limit before training\" (a first check, then a step on the spare)"
  # node02 loses its route to node01 before the job starts: ddp-watch's check of all four nodes
  # (the job's preflight, --first-check) names it, and the first step runs on the other three.
  ip netns exec "$(netns node02)" ip route add blackhole "$SUBNET.11/32"
  blackholed=node02
  submit 1 "$k_example" '[--epochs, "3"]'
  grep -q -- "--first-check" "$work/job.slurm"
  ended COMPLETED
  [ "$(field Restarts)" = 0 ]
  grep -qx "run 0 on node\[01-04\]" "$work/job.out"
  [ "$(grep -c "^run " "$work/job.out")" -eq 1 ]
  # Without a route to node01, node02 cannot take the check's task: srun's own line names it.
  grep -qE "^srun: error: Task launch for StepId=$job\.0 failed on node node02: " "$work/job.out"
  grep -qE "^ddp-watch: respawn: respawn 1 of at most 1 before the first step: node02 \(unreachable\): srun: Task launch for StepId=$job\.0 failed on node node02: .*; node\[01-03\] -> node\[01,03-04\]; the first step started [0-9.]+ s after the check of every node ended, its nodes checked in between$" "$work/job.out"
  [ "$(tail -n 1 "$work/job.out")" = "ddp-watch: respawn: respawns: 1 (before the first step): node02 (unreachable) node[01-03] -> node[01,03-04] started after $(sed -nE "s/^ddp-watch: respawn: respawn 1 of .*; the first step started ([0-9.]+ s) after .*$/\1/p" "$work/job.out")" ]
  # The check of the step's own nodes passed before it started; no requeue, no second start.
  grep -qE "^ddp-check: OK: 3 ranks on 3 nodes reached " "$work/job.out"
  [ "$(grep -c "requeueing" "$work/job.out")" -eq 0 ]
  [ "$(grep -c "^start world 3 " "$work/job.out")" -eq 1 ]
  for e in 1 2 3; do
    [ "$(grep -c "^epoch $e/3 loss " "$work/job.out")" -eq 1 ]
  done
  grep -qx "weights identical on 3 ranks" "$work/job.out"
}

@test "a node behind a bandwidth limit before training: the check's rank 0 names it, the first step takes the spare" {
  # Only ddp-check sees this fault: its rank 0, which judges the authenticated pairwise figures,
  # names node02 slow in a suspect line, and ddp-watch reads it from the task Slurm's layout of
  # the check step gives rank 0 (the first task of the node list's first node). Two processes
  # per node: Slurm 26.05 at the topology site then numbers the check's tasks from node04 (first
  # in topology.conf), so rank 0 on node01 is task 2, not task 0.
  command -v tc >/dev/null || skip "tc (iproute2) not installed"
  ip netns exec "$(netns node02)" tc qdisc add dev eth0 root tbf rate 200mbit burst 64kb latency 50ms
  limited=node02
  preflight='{pairs: true, pairs_threshold: 0.25, timeout: 30s}' procs=2 \
    submit 1 "$k_example" '[--epochs, "3"]'
  grep -q -- "--first-check .*--check-tasks-per-node=2" "$work/job.slurm"
  ended COMPLETED
  [ "$(field Restarts)" = 0 ]
  [ "$(grep -c "^run " "$work/job.out")" -eq 1 ]
  grep -qE "^ddp-check: suspect node02: slow: best pair 0\.[0-2][0-9] Gbit/s, median .* \[run [0-9a-f]{16}\]$" "$work/job.out"
  grep -qE "^ddp-watch: respawn: respawn 1 of at most 1 before the first step: node02 \(slow\): best pair 0\.[0-2][0-9] Gbit/s, median [^;]*; node\[01-03\] -> node\[01,03-04\]; the first step started [0-9.]+ s after the check of every node ended, its nodes checked in between$" "$work/job.out"
  [ "$(grep -c "requeueing" "$work/job.out")" -eq 0 ]
  [ "$(grep -c "^start world 6 " "$work/job.out")" -eq 1 ]
  grep -qx "weights identical on 6 ranks" "$work/job.out"
}

@test "spares: 0: the same fault falls back to exclude-and-requeue" {
  slurm_side_covered_by "heal.bats (exclusions and requeues)"
  submit 0 "$k_example" '[--epochs, "6", --epoch-sleep, "2"]'
  grep -qx "#SBATCH --nodes=3" "$work/job.slurm"
  bus_on node02 "epoch 2/6 loss .*" || { ended COMPLETED; false; }
  ended COMPLETED
  [ "$(field Restarts)" = 1 ]
  [ "$(field ExcNodeList)" = node02 ]
  [ "$(grep -c "^ddp-watch: respawn: " "$work/job.out")" -eq 0 ]
  grep -qx "ddp-watch: heal: requeueing: restart 1 of at most 2 without node02" "$work/job.out"
  grep -qx "run 1 on node\[01,03-04\]" "$work/job.out"
  grep -qx "weights identical on 3 ranks" "$work/job.out"
}

@test "a program whose rank 1 dies of SIGBUS on any node: one respawn, then the job fails" {
  cat >"$work/bus.py" <<'EOF2'
import os, signal, time
if os.environ["RANK"] == "1":
    print(f"rank 1 on {os.environ['SLURMD_NODENAME']}", flush=True)
    time.sleep(1)
    signal.signal(signal.SIGBUS, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGBUS)
time.sleep(60)
EOF2
  submit 1 "$work/bus.py" '[]'
  ended FAILED
  [ "$(field Restarts)" = 0 ]
  grep -qx "rank 1 on node02" "$work/job.out"
  grep -qx "rank 1 on node03" "$work/job.out"
  [ "$(grep -c "^ddp-watch: respawn: respawn " "$work/job.out")" -eq 1 ]
  grep -qE "^ddp-watch: respawn: respawn 1 of at most 1: node02 \(hardware-signal\): .*; node\[01-03\] -> node\[01,03-04\]; the new step started [0-9.]+ s after the failed one's srun exited, its nodes checked in between$" "$work/job.out"
  grep -qx "ddp-watch: respawn: the fault follows the job: hardware-signal on node03 as on node02 before the respawn; it is the program's or its input's, not a node's: not respawning, not requeueing" "$work/job.out"
  [ "$(grep -c "requeueing:" "$work/job.out")" -eq 0 ]
  # The job ends here as any failure heal gives up on: the closing line, and no record left.
  grep -qx "ddp-watch: heal: excluded across runs: none" "$work/job.out"
  [ ! -e "$work/.ddp-heal.$job" ]
  [ "$(tail -n 1 "$work/job.out")" = "ddp-watch: respawn: respawns: 1: node02 (hardware-signal) node[01-03] -> node[01,03-04] started after $(respawn_time)" ]
}

# hang_respawned: the job whose ranks on node02 hung in its first step finished on a spare:
# one respawn naming node02 for the hang, no requeue, every step done by 3 ranks.
hang_respawned() {
  ended COMPLETED
  [ "$(field Restarts)" = 0 ]
  [ "$(grep -c "^run " "$work/job.out")" -eq 1 ]
  [ "$(grep -c "^ddp-watch: respawn: respawn " "$work/job.out")" -eq 1 ]
  grep -qE "^ddp-watch: respawn: respawn 1 of at most 1: node02 \(hang\): .*stall\.py:[0-9]+.*; node\[01-03\] -> node\[01,03-04\]; the new step started [0-9]+\.[0-9]+ s after the failed one's srun exited(, its nodes checked in between)?$" "$work/job.out"
  [ "$(grep -c "requeueing" "$work/job.out")" -eq 0 ]
  # torchrun's workers' lines come with its [default0]: prefix.
  grep -qxE "(\[default0\]:)?done 8 steps world 3" "$work/job.out"
  # Every srun of the job, ddp-watch's stack helper included, was told its nodes and tasks.
  [ "$(grep -c "^srun: Warning" "$work/job.out")" -eq 0 ]
  [ "$(tail -n 1 "$work/job.out")" = "ddp-watch: respawn: respawns: 1: node02 (hang) node[01-03] -> node[01,03-04] started after $(respawn_time)" ]
}

@test "the ranks on node02 hang: the stall's culprit is replaced by a spare, same job" {
  submit 1 "$REPO/tests/cluster/stall.py" '[--steps, "8", --at-step, "3", --hang-node, node02]' srun 10s
  hang_respawned
}

@test "torchrun: the worker on node02 hangs: a new step on a spare, same job" {
  slurm_side_covered_by "\"the ranks on node02 hang\" (a stalled step ended, a new one on the spare) and plugin.bats (torchrun mode)"
  submit 1 "$REPO/tests/cluster/stall.py" '[--steps, "8", --at-step, "3", --hang-node, node02]' torchrun 10s
  grep -q "torchrun" "$work/job.slurm"
  hang_respawned
}

@test "torchrun without the plugin: the worker on node02 hangs: a new step on a spare, its nodes checked" {
  slurm_side_covered_by "\"the ranks on node02 hang\", \"without the plugin\" and topology.bats (torchrun without the plugin)"
  noplugin=1 submit 1 "$REPO/tests/cluster/stall.py" '[--steps, "8", --at-step, "3", --hang-node, node02]' torchrun 10s
  # One launcher per node under the task setup in its torchrun mode, the preflight's own.
  grep -qE -- "^ddp-watch .* --first-check .*--check-wrapper=8 -- " "$work/job.slurm"
  grep -q "ddpgen-task torchrun 1 " "$work/job.slurm"
  hang_respawned
  grep -qE "^ddp-watch: respawn: respawn 1 of at most 1: node02 \(hang\): .*, its nodes checked in between$" "$work/job.out"
}

@test "the spare cannot reach the head when the respawn comes: its check names it, no training on it" {
  slurm_side_covered_by "\"a node behind a bandwidth limit before training\" (a check step that names a node) and \"the ranks on node02 hang\" (a respawn)"
  submit 1 "$k_example" '[--epochs, "6", --epoch-sleep, "2"]'
  # After the job's preflight passed on all four nodes, node04 loses its route to node01.
  local deadline=$((SECONDS + 180))
  until grep -q "^epoch 1/6 loss " "$work/job.out" 2>/dev/null; do
    ((SECONDS < deadline)) || { ended COMPLETED; false; }
    sleep 0.2
  done
  ip netns exec "$(netns node04)" ip route add blackhole "$SUBNET.11/32"
  blackholed=node04
  bus_on node02 "epoch 2/6 loss .*" || { ended FAILED; false; }
  ended FAILED
  [ "$(field Restarts)" = 0 ]
  grep -qE "^ddp-check: OK: 4 ranks on 4 nodes reached " "$work/job.out"
  # No step started there, and the log says so: the respawn's line tells the failed check and
  # what follows, and no line says a new step started.
  grep -qx "ddp-watch: respawn: respawn 1 of at most 1: node02 (hardware-signal): .*; node\[01-03\] -> node\[01,03-04\]: the check of node\[01,03-04\] failed, no step started there; not respawning: respawned 1 time(s), the cap (heal.max_respawns: 1); the heal path takes over" "$work/job.out"
  [ "$(grep -c "the new step started" "$work/job.out")" -eq 0 ]
  # The check of node[01,03-04] (the job's step 2) cannot start on node04: srun says so, which
  # names it; the training never resumes there. (A training step would fail to launch there
  # alike; test 1 shows the check itself running before the training resumes.)
  grep -qE "^srun: error: Task launch for StepId=$job\.2 failed on node node04: " "$work/job.out"
  grep -qx "ddp-watch: heal: named node04 (unreachable): srun: Task launch for StepId=$job.2 failed on node node04: Communication connection failure" "$work/job.out"
  [ "$(grep -c "^resumed from epoch" "$work/job.out")" -eq 0 ]
  # No spare left: the heal path has node02 and node04, and 2 of the partition's 4 nodes would
  # not hold the job: it ends, naming them, instead of pending for ever.
  grep -qx "ddp-watch: heal: not requeueing: excluding 2 more would leave 2 of the partition's 4 nodes (0 excluded already) for a job of 4; the job ends, naming node\[02,04\]" "$work/job.out"
  [ "$(tail -n 1 "$work/job.out")" = "ddp-watch: respawn: respawns: 1: node02 (hardware-signal) node[01-03] -> node[01,03-04] check failed, not started" ]
}
