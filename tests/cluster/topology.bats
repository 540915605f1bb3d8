#!/usr/bin/env bats
# --ddp on a site with a topology plugin whose switch order contradicts the node names
# (cluster.sh up --topology tree: node03 alone on the first leaf switch, node[01-02] on the
# second). Slurm 26.05 numbers a step's tasks in topology order by default, so SLURM_PROCID 0
# runs on node03, the last node of SLURM_STEP_NODELIST; earlier releases keep the name order.
# Under both, every task must get RANK 0 and MASTER_ADDR on the same node (the list's first),
# ranks complete and unique, and a gloo rendezvous must work: with the plugin, and with the
# per-task setup ddpgen writes where the plugin is not installed (templates/task-setup.sh), in
# scripts of its srun and torchrun launchers that train to the end.
# The fixture's cluster is started again with the topology (same Slurm, same plugin) in
# setup_file, unless it already is a topology/tree site (DDP_CLUSTER_TOPOLOGY=tree), and as the
# fixture's kind of site again in teardown_file, a few seconds each.
#
# ddp-watch there names a stuck rank by its RANK and node, as Slurm's task order differs.
#
# Needs: the cluster with the plugin; Debian's python3-torch for the rendezvous and ddp-watch
# ($DDP_WATCH_BIN, else the build's) for the stall (skips, saying why, without them).

bats_require_minimum_version 1.5.0
load lib

# What each task prints, sorted by host then LOCAL_RANK (not by SLURM_PROCID, whose order is
# the point of this file).
TASK_VARS='$(hostname) $LOCAL_RANK $RANK $SLURM_PROCID $MASTER_ADDR $WORLD_SIZE $LOCAL_WORLD_SIZE $NODE_RANK $NNODES'

# The topology the cluster runs (cluster.sh records it): "" for none.
running_topology() {
  cat "$DDP_CLUSTER_DIR/topology" 2>/dev/null || true
}

setup_file() {
  export TOPOLOGY_RESTORE="" TOPOLOGY_FIXTURE=""
  "$CLUSTER" status >/dev/null 2>&1 || return 0
  [[ -f $DDP_CLUSTER_DIR/lib/spank_ddp.so ]] || return 0
  cp "$DDP_CLUSTER_DIR/lib/spank_ddp.so" "$BATS_FILE_TMPDIR/spank_ddp.so"
  TOPOLOGY_FIXTURE=$(running_topology)
  TOPOLOGY_RESTORE=1
  [[ $TOPOLOGY_FIXTURE != tree ]] || return 0
  cluster_restart 3 "$BATS_FILE_TMPDIR/up-tree.log" --topology tree ||
    { cat "$BATS_FILE_TMPDIR/up-tree.log" >&3; return 1; }
}

# The last test leaves a topology/block site: the fixture's kind of site comes back unless that
# is what runs.
teardown_file() {
  [[ -n ${TOPOLOGY_RESTORE:-} ]] || return 0
  [[ $(running_topology) != "$TOPOLOGY_FIXTURE" ]] || return 0
  cluster_restart 3 "$BATS_FILE_TMPDIR/up-fixture.log" --topology="$TOPOLOGY_FIXTURE"
}

setup() {
  skip_unless_cluster
  [[ -f $DDP_CLUSTER_DIR/lib/spank_ddp.so ]] || skip "the cluster runs without the plugin"
  [[ $(cat "$DDP_CLUSTER_DIR/topology" 2>/dev/null) == tree ]] ||
    skip "the cluster did not start with --topology tree (setup_file)"
  "$CLUSTER" set-plugstack ""
}

# Slurm 26.05 and later lay steps out in topology order; earlier releases in name order.
topology_ordered() {
  local version
  version=$("$CLUSTER" run scontrol --version | awk '{print $2}')
  [[ $(printf '%s\n' "$version" 26.05 | sort -V | head -n 1) == 26.05 ]]
}

# covered_at_this_layout CASES: on another release's cluster, a case here whose twin in another
# suite of the same run meets the same layout skips, naming the twin: where the fixture itself is
# this topology/tree site (every suite ran there), or where Slurm keeps the name order at a
# topology site (before 26.05), which is the plain site's layout. Otherwise it runs.
covered_at_this_layout() {
  if [[ ${DDP_CLUSTER_TOPOLOGY:-} == tree ]] || ! topology_ordered; then
    slurm_side_covered_by "$1"
  fi
}

task_table() {
  "$CLUSTER" run srun "$@" bash -c "echo $TASK_VARS" | sort -k1,1 -k2,2n
}

@test "the cluster is a topology site: Slurm 26.05 runs task 0 on node03, earlier ones on node01" {
  run "$CLUSTER" run srun -N3 --ntasks-per-node=2 bash -c 'echo "$SLURM_PROCID $(hostname) $SLURM_NODEID"'
  [ "$status" -eq 0 ]
  first=$(sort -n <<<"$output" | head -n 1)
  if topology_ordered; then
    [ "$first" = "0 node03 2" ]
  else
    [ "$first" = "0 node01 0" ]
  fi
}

@test "--ddp: RANK 0 and MASTER_ADDR on node01, ranks by node, under the topology order" {
  run task_table -N3 --ntasks-per-node=2 --ddp
  [ "$status" -eq 0 ]
  # host LOCAL_RANK RANK (SLURM_PROCID left out: it differs by release) MASTER_ADDR ...
  expected="node01 0 0 $SUBNET.11 6 2 0 3
node01 1 1 $SUBNET.11 6 2 0 3
node02 0 2 $SUBNET.11 6 2 1 3
node02 1 3 $SUBNET.11 6 2 1 3
node03 0 4 $SUBNET.11 6 2 2 3
node03 1 5 $SUBNET.11 6 2 2 3"
  diff <(echo "$expected") <(awk '{$4 = ""; print}' <<<"$output" | tr -s ' ')
  # SLURM_PROCID is Slurm's own task id, left as Slurm set it.
  procids=$(awk '{print $1 ":" $4}' <<<"$output" | sort -t: -k2n | paste -sd ' ')
  if topology_ordered; then
    [ "$procids" = "node03:0 node03:1 node01:2 node01:3 node02:4 node02:5" ]
  else
    [ "$procids" = "node01:0 node01:1 node02:2 node02:3 node03:4 node03:5" ]
  fi
}

@test "srun -v --ddp says which ranks differ from SLURM_PROCID, and why" {
  run "$CLUSTER" run srun -v -N3 --ntasks-per-node=2 --ddp true
  [ "$status" -eq 0 ]
  if topology_ordered; then
    grep -F "ddp: node03: RANK 4-5 for SLURM_PROCID 0-1 (ranks follow SLURM_STEP_NODELIST" <<<"$output"
    grep -F "ddp: node01: RANK 0-1 for SLURM_PROCID 2-3" <<<"$output"
  else
    run ! grep -F "for SLURM_PROCID" <<<"$output"
  fi
}

@test "gloo all-reduce with --ddp across 3 nodes x 2 tasks, rank 0 on node01" {
  covered_at_this_layout "plugin.bats' \"gloo all-reduce across 3 nodes x 2 tasks in tasks mode\" (the same step, rank 0 and the address checked)"
  need_torch
  run "$CLUSTER" run srun -N3 --ntasks-per-node=2 --ddp /usr/bin/python3 "$REPO/contrib/examples/allreduce.py"
  [ "$status" -eq 0 ]
  [ "$(allreduce_ranks 6 "$SUBNET\.11:[0-9]+" <<<"$output")" = "0 1 2 3 4 5" ]
  grep -E '^rank=0 .* host=node01 ' <<<"$output"
}

# setup_step SRUN_OPTIONS... -- COMMAND...: the per-task setup ddpgen writes into a script for a
# site without the plugin, as the script runs it (bash -c, then the command), in one step.
setup_step() {
  local options=() setup
  while (($#)) && [[ $1 != -- ]]; do options+=("$1"); shift; done
  shift
  setup=$(<"$REPO/templates/task-setup.sh")$'\n'
  "$CLUSTER" run srun "${options[@]}" bash -c "$setup"'exec "$@"' ddpgen-task tasks 2 20000 11000 "$@"
}

@test "ddpgen's setup without the plugin: RANK 0 and MASTER_ADDR on node01, ranks by node" {
  run setup_step -N3 --ntasks-per-node=2 -- bash -c "echo $TASK_VARS"
  [ "$status" -eq 0 ]
  expected="node01 0 0 node01 6 2 0 3
node01 1 1 node01 6 2 0 3
node02 0 2 node01 6 2 1 3
node02 1 3 node01 6 2 1 3
node03 0 4 node01 6 2 2 3
node03 1 5 node01 6 2 2 3"
  diff <(echo "$expected") <(sort -k1,1 -k2,2n <<<"$output" | awk '{$4 = ""; print}' | tr -s ' ')
}

@test "ddpgen's setup without the plugin: gloo all-reduce, rank 0 on node01" {
  need_torch
  run setup_step -N3 --ntasks-per-node=2 -- /usr/bin/python3 "$REPO/contrib/examples/allreduce.py"
  [ "$status" -eq 0 ]
  [ "$(allreduce_ranks 6 "node01:[0-9]+" <<<"$output")" = "0 1 2 3 4 5" ]
  grep -E '^rank=0 .* host=node01 ' <<<"$output"
}

# train_without_plugin JOB_FILE LAUNCH_REGEX: a script ddpgen renders for this cluster as if the
# plugin were not installed (the local profile with ddp_plugin: false), from contrib/examples/
# JOB_FILE, whose training launch must match LAUNCH_REGEX; submitted with sbatch, 3 nodes x 2
# ranks, trained to the end with identical weights on every rank.
train_without_plugin() {
  local work=$BATS_TEST_TMPDIR/job examples=$REPO/contrib/examples
  mkdir -p "$work"
  chmod 755 "$BATS_TEST_TMPDIR" "$work"
  sed 's/^ddp_plugin: true$/ddp_plugin: false/' "$REPO/site-profiles/local.yaml" >"$work/profile.yaml"
  "$DDPGEN" --profile "$work/profile.yaml" "$examples/$1" -o "$work/job.slurm" \
    --set "script=$examples/autoencoder.py" --set 'args=[--epochs, "2"]' \
    --set "checkpoint.dir=$work/ckpt" --set "output=$work/job-%j.out"
  grep -qE "$2" "$work/job.slurm"
  run ! grep -qE '^srun .*--ddp' "$work/job.slurm"
  id=$(cd "$work" && cl env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    sbatch --parsable job.slurm)
  wait_job "$id" 200 || { cat "$work/job-$id.out"; return 1; }
  sed -E 's/^\[default[0-9]+\]://' "$work/job-$id.out" >"$work/log"
  grep -q '^start world 6 backend gloo device cpu ' "$work/log"
  grep -q '^weights identical on 6 ranks$' "$work/log"
}

# The srun launcher: one task per process, each numbering its RANK by node (task-setup.sh).
@test "ddpgen's script without the plugin trains on the topology site, not waiting on rank 0" {
  skip_unless_cluster
  need_torch
  need_ddpgen
  train_without_plugin autoencoder-srun.yaml '^  bash -c "\$ddpgen_task_setup"'\''exec "\$@"'\'' ddpgen-task tasks '
}

# The torchrun launcher: one torchrun per node, node rank SLURM_NODEID (the list's order, which
# 26.05 keeps), its static rendezvous on the list's first node.
@test "ddpgen's torchrun script without the plugin trains on the topology site" {
  skip_unless_cluster
  need_torch
  need_ddpgen
  train_without_plugin autoencoder-torchrun.yaml '^  bash -c "\$ddpgen_task_setup"'\''exec "\$@"'\'' ddpgen-task torchrun 2 '
}

# ddp-watch under the topology order: a rank stuck in its data loading is named by its RANK and
# its node, although Slurm numbered the tasks in another order (26.05: task 0 is RANK 4, on
# node03); every rank's stack is in the stacks file under its own task and rank.
@test "ddp-watch names the stuck rank and its node under the topology order" {
  skip_unless_cluster
  covered_at_this_layout "watchdog.bats' \"srun tasks: a rank stuck in data loading\" (a stuck rank named by RANK and node, each stack under its task)"
  need_torch
  local watch_bin=${DDP_WATCH_BIN:-$REPO/build/contrib/ddp-watch/ddp-watch}
  [[ -x $watch_bin ]] || skip "ddp-watch not built (cmake --build build) and DDP_WATCH_BIN unset"
  local work=$BATS_TEST_TMPDIR/watch
  mkdir -p "$work"
  chmod 755 "$BATS_TEST_TMPDIR" "$work"
  cat >"$work/job.sh" <<JOB
#!/bin/bash
#SBATCH --nodes=3 --ntasks-per-node=2 --time=5:00 --output=$work/job-%j.out
export OMP_NUM_THREADS=1
status=0
$watch_bin --timeout 15s --startup 120s --grace 20s --stacks $work/stacks.txt -- \\
  srun --ddp /usr/bin/python3 $REPO/tests/cluster/stall.py --steps 100000 --hang-rank 1 \\
  --at-step 10 || status=\$?
echo "watch exit \$status"
exit \$status
JOB
  id=$(cd "$work" && cl env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    sbatch --parsable job.sh)
  state=$(wait_job_end "$id" 240)
  grep -v '^step ' "$work/job-$id.out" | cut -c1-300
  [ "$state" = FAILED ]
  grep -qx 'watch exit 124' "$work/job-$id.out"
  grep -qE '^ddp-watch: verdict: rank 1 on node01 at stall\.py:[0-9]+ in load_batch; ranks 0,2-5 on node\[01-03\] wait in ' "$work/job-$id.out"
  # Each stack under its task and rank: RANK 1 is task 3 under the topology order, else task 1.
  local task=1
  if topology_ordered; then task=3; fi
  grep -qx "=== task $task, rank 1, node node01, elsewhere ===" "$work/stacks.txt"
  [ "$(grep -c '^=== task [0-5], rank [0-5], node node0[1-3], ' "$work/stacks.txt")" -eq 6 ]
}

# Last: it leaves the cluster a topology/block site, which teardown_file replaces.
@test "topology/block (Slurm 23.11 and later): an uneven step still has RANK 0 on node01" {
  if "$CLUSTER" run scontrol --version | grep -qE ' (1[0-9]|2[0-2]|23\.0[0-9])\.'; then
    skip "$("$CLUSTER" run scontrol --version) has no topology/block (23.11 and later)"
  fi
  cluster_restart 3 "$BATS_FILE_TMPDIR/up-block.log" --topology block ||
    { cat "$BATS_FILE_TMPDIR/up-block.log"; return 1; }
  # cons_tres packs -n6 unevenly (4/1/1 or so); the ranks must still run node by node.
  run task_table -N3 -n6 --ddp
  [ "$status" -eq 0 ]
  [ "$(awk '{print $3}' <<<"$output" | paste -sd ' ')" = "0 1 2 3 4 5" ]
  [ "$(awk '$3 == 0 {print $1}' <<<"$output")" = node01 ]
  [ "$(awk '{print $5}' <<<"$output" | sort -u)" = "$SUBNET.11" ]
  if topology_ordered; then
    # node03 comes first in topology.conf: Slurm's task 0 runs there.
    [ "$(awk '$4 == 0 {print $1}' <<<"$output")" = node03 ]
  fi
}
