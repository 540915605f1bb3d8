#!/usr/bin/env bats
# --ddp and GPU binding, on the emulated GPUs of a site cluster (cluster.sh up --site ibex: 8
# GPUs per node on node01 and node02, fake devices that slurmd allocates, binds and exports as
# real ones). With one GPU set per node every task sees the node's GPUs and LOCAL_RANK names
# one of them; with per-task binding (--gpus-per-task, --gpu-bind=single:1, map_gpu) each task
# sees fewer GPUs than the busiest node has tasks, torch.cuda.set_device(LOCAL_RANK) would fail,
# and the step is refused on every node before any task runs, unless DDP_GPU_BIND=task says
# the script uses the GPU Slurm bound. Checks CUDA_VISIBLE_DEVICES and SLURM_STEP_GPUS as Slurm
# sets them, LOCAL_RANK and RANK as the plugin exports them, and the refusal's text.
#
# This file brings its own cluster up and down, like sites.bats: it runs on cluster
# DDP_CLUSTER_ID when that is 1-9, else on cluster 5. Needs root, Slurm, Lmod (for the site
# emulation) and the plugin ($DDP_PLUGIN, else build/spank/spank_ddp.so).

bats_require_minimum_version 1.5.0

if [[ ! ${DDP_CLUSTER_ID:-} =~ ^[1-9]$ ]]; then
  export DDP_CLUSTER_ID=5
  unset DDP_CLUSTER_DIR
fi
load lib

setup_file() {
  GPU_WORK=$(mktemp -d /tmp/ddp-gpu.XXXXXX)
  export GPU_WORK
}

teardown_file() {
  "$CLUSTER" down >/dev/null 2>&1 || true
  rm -rf "${GPU_WORK:?}"
}

setup() {
  local why status plugin=${DDP_PLUGIN:-$REPO/build/spank/spank_ddp.so}
  why=$("$CLUSTER" check 2>&1) || skip "cluster prerequisite missing: $why"
  [[ -r /usr/share/lmod/lmod/init/bash ]] ||
    skip "Lmod is not installed (bash contrib/install-deps.sh): sites cannot be emulated"
  [[ -f $plugin ]] || skip "plugin not built ($plugin); set DDP_PLUGIN"
  if ! status=$("$CLUSTER" status 2>/dev/null) || ! grep -qx "site: ibex" <<<"$status"; then
    "$CLUSTER" up --site ibex --plugin "$plugin" >"$GPU_WORK/up.log" 2>&1 ||
      { cat "$GPU_WORK/up.log" >&2; return 1; }
  else
    "$CLUSTER" install-plugin "$plugin"   # a cluster left up runs this build's plugin too
  fi
  "$CLUSTER" set-plugstack ""
  "$CLUSTER" set-plugstack-kind required
}

teardown() {
  "$CLUSTER" set-plugstack-kind required >/dev/null 2>&1 || true
}

# The two 8-GPU nodes; Ibex requires a time limit.
k_nodes=(-t 5 -w 'node[01-02]' -N2)

# Per task, sorted by task id: host, CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS, LOCAL_RANK, RANK.
gpu_env() {
  task_env "${k_nodes[@]}" "$@" -- hostname CUDA_VISIBLE_DEVICES SLURM_STEP_GPUS LOCAL_RANK RANK
}

@test "--gpus-per-node: every task sees its node's GPUs and LOCAL_RANK names one of them" {
  run gpu_env --ntasks-per-node=4 --gpus-per-node=4 --ddp
  [ "$status" -eq 0 ]
  [ "$output" = "0 node01 0,1,2,3 0,1,2,3 0 0
1 node01 0,1,2,3 0,1,2,3 1 1
2 node01 0,1,2,3 0,1,2,3 2 2
3 node01 0,1,2,3 0,1,2,3 3 3
4 node02 0,1,2,3 0,1,2,3 0 4
5 node02 0,1,2,3 0,1,2,3 1 5
6 node02 0,1,2,3 0,1,2,3 2 6
7 node02 0,1,2,3 0,1,2,3 3 7" ]
}

@test "--gpus-per-task=1 with two tasks per node is refused before any task runs, required or optional" {
  for kind in required optional; do
    "$CLUSTER" set-plugstack-kind "$kind"
    run cl srun "${k_nodes[@]}" --ntasks-per-node=2 --gpus-per-task=1 --ddp bash -c 'echo USER-CODE-RAN'
    echo "# $kind: status $status" >&3
    [ "$status" -ne 0 ]
    [[ "$output" != *USER-CODE-RAN* ]]
    for node in node01 node02; do
      grep -F "ddp: $node: each task sees 1 GPU (CUDA_VISIBLE_DEVICES=" <<<"$output" |
        grep -F "but the step runs up to 2 tasks per node: torch.cuda.set_device(LOCAL_RANK) fails" |
        grep -F "use --gpus-per-node=N" | grep -qF "DDP_GPU_BIND=task"
    done
  done
}

@test "--gpu-bind=single:1 and --gpu-bind=map_gpu are refused alike" {
  for bind in single:1 map_gpu:1,0; do
    run cl srun "${k_nodes[@]}" --ntasks-per-node=2 --gpus-per-node=2 --gpu-bind="$bind" --ddp \
      bash -c 'echo USER-CODE-RAN'
    [ "$status" -ne 0 ]
    [[ "$output" != *USER-CODE-RAN* ]]
    [[ "$output" == *"ddp: node01: each task sees 1 GPU (CUDA_VISIBLE_DEVICES="[01]")"* ]]
  done
}

@test "an uneven step (2 tasks on node01, 1 on node02) is refused on both nodes, so no rank waits" {
  run cl srun "${k_nodes[@]}" -n3 --gpus-per-task=1 --ddp bash -c 'echo USER-CODE-RAN $(hostname)'
  [ "$status" -ne 0 ]
  # node02's one task sees one GPU, enough for itself, but its rank would wait for node01's.
  [[ "$output" != *USER-CODE-RAN* ]]
  [[ "$output" == *"ddp: node02: each task sees 1 GPU (CUDA_VISIBLE_DEVICES=0) but the step runs up to 2 tasks per node"* ]]
  [[ "$output" == *"ddp: node01: each task sees 1 GPU"* ]]
}

@test "DDP_GPU_BIND=task keeps Slurm's per-task binding: each task its own GPU, ranks as usual" {
  run gpu_env --ntasks-per-node=2 --gpus-per-task=1 --export=ALL,DDP_GPU_BIND=task --ddp
  [ "$status" -eq 0 ]
  [ "$output" = "0 node01 0 0 0 0
1 node01 1 1 1 1
2 node02 0 0 0 2
3 node02 1 1 1 3" ]
}

@test "one task per node with --gpus-per-task=1 is not refused: LOCAL_RANK 0 is its GPU" {
  run gpu_env --ntasks-per-node=1 --gpus-per-task=1 --ddp
  [ "$status" -eq 0 ]
  [ "$output" = "0 node01 0 0 0 0
1 node02 0 0 0 1" ]
}

@test "torchrun mode: one launcher per node, one worker per GPU Slurm gave the node" {
  run task_env "${k_nodes[@]}" --ntasks-per-node=1 --gpus-per-node=3 --ddp=torchrun -- \
    hostname CUDA_VISIBLE_DEVICES NPROC_PER_NODE PET_NPROC_PER_NODE WORLD_SIZE LOCAL_RANK
  [ "$status" -eq 0 ]
  [ "$output" = "0 node01 0,1,2 3 3 6 <unset>
1 node02 0,1,2 3 3 6 <unset>" ]
}
