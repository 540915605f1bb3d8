#!/usr/bin/env bats
# ddpgen against the live cluster it runs on: `ddpgen profile init` drafts a profile from
# scontrol's partitions and nodes (limits, GPU GRES and types, features, --ddp), and
# `ddpgen validate --live` reports where a profile disagrees with the cluster. Run on the plain
# embedded cluster (with the plugin) and on each site emulation (cluster.sh up --site NAME):
# the draft is a valid profile that agrees with its cluster and renders a script that cluster's
# sbatch accepts; the shipped profile of each emulated site has no conflict with it; a profile
# for another site has, and says which.
#
# This file brings its own clusters up and down, like sites.bats: it runs on cluster
# DDP_CLUSTER_ID when that is 1-9, else on cluster 6. Needs root, Slurm, Lmod (for the sites),
# the plugin ($DDP_PLUGIN, else build/spank/spank_ddp.so) and ddpgen.

bats_require_minimum_version 1.5.0

if [[ ! ${DDP_CLUSTER_ID:-} =~ ^[1-9]$ ]]; then
  export DDP_CLUSTER_ID=6
  unset DDP_CLUSTER_DIR
fi
load lib

setup_file() {
  LIVE_WORK=$(mktemp -d /tmp/ddp-live.XXXXXX)
  export LIVE_WORK
}

teardown_file() {
  "$CLUSTER" down >/dev/null 2>&1 || true
  rm -rf "${LIVE_WORK:?}"
}

setup() {
  local why
  why=$("$CLUSTER" check 2>&1) || skip "cluster prerequisite missing: $why"
  need_ddpgen
  work=$LIVE_WORK
}

# up [--site NAME]: the cluster as asked, unless it already is.
up() {
  local want=${2:-none (plain)} status
  if status=$("$CLUSTER" status 2>/dev/null) && grep -qxF "site: ${2:-}" <<<"$status"; then return 0; fi
  if [[ -n ${2:-} ]]; then
    [[ -r /usr/share/lmod/lmod/init/bash ]] || skip "Lmod is not installed: sites cannot be emulated"
    "$CLUSTER" up --site "$2" >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; return 1; }
  else
    local plugin=${DDP_PLUGIN:-$REPO/build/spank/spank_ddp.so}
    [[ -f $plugin ]] || skip "plugin not built ($plugin); set DDP_PLUGIN"
    "$CLUSTER" up --plugin "$plugin" >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; return 1; }
  fi
  echo "cluster up: $want"
}

# draft NAME: ddpgen profile init on the cluster's login host, into $work/NAME.yaml.
draft() {
  cl "$DDPGEN" profile init --name "$1" -o "$work/$1.yaml"
  cat "$work/$1.yaml"
}

# live PROFILE: ddpgen validate --live on the login host; sets status and output.
live() {
  run cl "$DDPGEN" validate --live --profile "$1"
  echo "$output"
}

@test "plain cluster: the draft has its partition, limits and the plugin, and agrees with it" {
  up
  draft plain
  grep -qxF 'ddp_plugin: true' "$work/plain.yaml"
  grep -qxF '  - name: debug' "$work/plain.yaml"
  grep -qxF '    max_nodes: 3' "$work/plain.yaml"
  grep -qxF 'node: {gpus: 0, cores: 2, memory_gb: 0}' "$work/plain.yaml" ||
    grep -qE '^node: \{gpus: 0, cores: [0-9]+, memory_gb: [0-9]+\}$' "$work/plain.yaml"
  live "$work/plain.yaml"
  [ "$status" -eq 0 ]
  [[ $output == *'against this cluster: 0 conflict(s)'* ]]
  # The draft renders a script this cluster's sbatch accepts.
  printf 'nodes: 3\ngpus_per_node: 0\nprocs_per_node: 2\ntime: "00:05:00"\nlauncher: srun\nscript: %s\n' \
    "$REPO/contrib/examples/allreduce.py" >"$work/job.yaml"
  "$DDPGEN" --profile "$work/plain.yaml" "$work/job.yaml" -o "$work/plain.sbatch"
  run cl sbatch --test-only "$work/plain.sbatch"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *'to start at'* ]]
}

@test "plain cluster: the shipped local profile has no conflict; notes name its stricter limits" {
  up
  live local
  [ "$status" -eq 0 ]
  [[ $output == *'against this cluster: 0 conflict(s)'* ]]
  [[ $output == *'note: partitions[0] (debug): max_time 01:00:00 in the profile; the cluster has no limit'* ]]
}

@test "plain cluster: a profile for another cluster conflicts, naming each culprit" {
  up
  live puhti
  [ "$status" -eq 1 ]
  [[ $output == *'conflict: partitions[0] (gpu): no such partition on this cluster (have: debug)'* ]]
  [[ $output == *'conflict: partitions[1] (gputest): no such partition on this cluster (have: debug)'* ]]
  printf 'extends: %s\nddp_plugin: false\npartitions: {replace: [{name: debug, max_nodes: 3, max_time: "1:00:00"}]}\nnode: {gpus: 4, gpu_type: v100}\n' \
    "$REPO/site-profiles/local.yaml" >"$work/gpus.yaml"
  live "$work/gpus.yaml"
  [ "$status" -eq 1 ]
  [[ $output == *'conflict: partitions[0] (debug): node.gpus 4 in the profile; the nodes have at most 0'* ]]
  [[ $output == *'note: ddp_plugin: false in the profile, but srun here offers --ddp'* ]]
}

# site SITE LINE...: on the emulated SITE, the draft has each LINE and agrees with the
# cluster; the shipped profile has $conflicts conflicts (default 0).
site() {
  local name=$1 line
  shift
  up --site "$name"
  draft "$name-draft"
  for line in "$@"; do
    grep -qxF -- "$line" "$work/$name-draft.yaml" || { echo "missing from the draft: $line" >&2; return 1; }
  done
  live "$work/$name-draft.yaml"
  [ "$status" -eq 0 ]
  [[ $output == *'0 conflict(s)'* ]]
  live "$name"
  [ "$status" -eq "$((${conflicts:-0} > 0))" ]
  [[ $output == *" ${conflicts:-0} conflict(s)"* ]]
}

@test "site puhti: v100 nodes, CSC's partitions and limits" {
  site puhti 'node: {gpus: 4, gpu_type: v100, cores: 40, memory_gb: 373}' '  - name: gputest' \
    '    max_time: "00:15:00"' '    max_time: "3-00:00:00"'
}

@test "site mahti: a100 nodes, gpusmall's one node" {
  site mahti 'node: {gpus: 4, gpu_type: a100, cores: 128, memory_gb: 490}' '  - name: gpusmall' \
    '    max_nodes: 1' '    max_time: "1-12:00:00"'
}

@test "site narvi: v100 and p100 nodes in one partition, told apart by a feature" {
  site narvi '    constraint: volta' '    constraint: pascal'
}

@test "site ibex: v100 x8 and a100 x4 nodes, told apart by a feature" {
  # The emulation has three of Ibex's nodes and no 8-GPU A100 node: the profile's entry for
  # those is the one conflict, and it is named.
  conflicts=1 site ibex 'node: {gpus: 8, gpu_type: v100, cores: 46, memory_gb: 383}' \
    '    constraint: a100' '    node: {gpus: 4, gpu_type: a100, cores: 62, memory_gb: 512}'
  [[ $output == *'conflict: partitions[2] (batch): constraint "a100&8gpus" matches no node of the partition'* ]]
}

@test "site parallelcluster-efa: untyped gpu:8, no time limit" {
  site parallelcluster-efa 'node: {gpus: 8, cores: 96, memory_gb: 1152}' '  - name: gpu'
}

@test "site puhti: the mahti profile conflicts with puhti's cluster" {
  up --site puhti
  live mahti
  [ "$status" -eq 1 ]
  [[ $output == *'conflict: partitions[0] (gpusmall): no such partition on this cluster'* ]]
  [[ $output == *'gpu_type "a100" is no GPU GRES type of the nodes (have: v100)'* ]]
}
