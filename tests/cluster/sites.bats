#!/usr/bin/env bats
# Site emulation: for each site it emulates the embedded cluster is brought up configured like it
# (cluster.sh up --site NAME, from tests/cluster/sites/NAME/), and that real sbatch judges the
# script ddpgen renders from the site's profile (site-profiles/NAME.yaml):
#   full node  the script a user would submit (the site's GPUs, CPUs, memory, GRES, constraint,
#              partition) passes sbatch --test-only, on the nodes and partition expected;
#   runs       with fewer GPUs (a CPU override: the GPUs are fake devices, so each process
#              trains with gloo on the CPU) it trains contrib/examples/autoencoder.py to
#              completion: world size, both epochs, identical weights, the site's GPU GRES
#              allocated on each node, the site's module and container stubs in the log;
#   refuses    what the site would refuse (a GPU type it lacks, a limit, a missing account) is
#              refused by the same sbatch, so the emulation is shown to check something; and
#              where ddpgen's validation covers it, ddpgen refuses it too, before submission.
#
# This file brings its own clusters up (one per site, a few seconds each) and down: it needs no
# fixture. It runs on cluster DDP_CLUSTER_ID when that is 1-9, else on cluster 5; never on
# cluster 0, the fixture's plain cluster that `up --site` would replace. DDP_SITES_KEEP=1 leaves
# the last site's cluster up for inspection. Needs root, Slurm, Lmod, Debian's python3-torch and
# ddpgen ($DDPGEN, else build/gen/ddpgen, else ddpgen on PATH); missing ones skip, visibly.

bats_require_minimum_version 1.5.0

if [[ ! ${DDP_CLUSTER_ID:-} =~ ^[1-9]$ ]]; then
  export DDP_CLUSTER_ID=5
  unset DDP_CLUSTER_DIR   # it would name cluster 0's state
fi
load lib

k_sites=$REPO/tests/cluster/sites
k_example=$REPO/contrib/examples/autoencoder.py
# Two short epochs on a small synthetic set: seconds per job on 2 cores.
k_args='[--epochs, "2", --samples, "256"]'

setup_file() {
  SITES_WORK=$(mktemp -d /tmp/ddp-sites.XXXXXX)
  export SITES_WORK
}

teardown_file() {
  if [[ ${DDP_SITES_KEEP:-0} != 1 ]]; then "$CLUSTER" down >/dev/null 2>&1 || true; fi
  rm -rf "${SITES_WORK:?}"
}

setup() {
  local why
  why=$("$CLUSTER" check 2>&1) || skip "cluster prerequisite missing: $why"
  [[ -r /usr/share/lmod/lmod/init/bash ]] ||
    skip "Lmod is not installed (bash contrib/install-deps.sh): site modules cannot be emulated"
  need_torch
  need_ddpgen
  work=$SITES_WORK
}

# Brings the cluster up as SITE unless it already is.
use_site() {
  local status
  if status=$("$CLUSTER" status 2>/dev/null) && grep -qx "site: $1" <<<"$status"; then return 0; fi
  "$CLUSTER" up --site "$1" >"$work/up-$1.log" 2>&1 || { cat "$work/up-$1.log" >&2; return 1; }
}

# render SITE OUT [--set K=V ...]: the site's job file (tests/cluster/sites/SITE/job.yaml) with
# the example program, rendered with the site's profile into OUT.
render() {
  local site=$1 out=$2
  shift 2
  "$DDPGEN" --profile "$site" "$k_sites/$site/job.yaml" -o "$out" --set "script=$k_example" \
    --set "args=$k_args" --set "output=$work/$site-%j.out" "$@" 2>"$out.stderr" ||
    { cat "$out.stderr" >&2; return 1; }
}

# full_node SITE PROCESSORS NODES PARTITION DIRECTIVE...: the job file as written (whole nodes
# of GPUs) renders with each DIRECTIVE, and sbatch --test-only would start it on NODES in
# PARTITION with PROCESSORS CPUs.
full_node() {
  local site=$1 cpus=$2 nodes=$3 partition=$4 d
  shift 4
  use_site "$site"
  render "$site" "$work/$site-full.sbatch"
  for d in "$@"; do
    grep -qxF "#SBATCH $d" "$work/$site-full.sbatch" || { echo "no '#SBATCH $d' in the script" >&2; return 1; }
  done
  run cl sbatch --test-only "$work/$site-full.sbatch"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output =~ \ to\ start\ at\ .*\ using\ $cpus\ processors\ on\ nodes\ $nodes\ in\ partition\ $partition$ ]]
}

# run_site SITE WORLD [--set K=V ...]: renders the site's job with the overrides, submits it,
# waits for it to complete and leaves its log in $log and its id in $id; checks the training:
# world size WORLD, both epochs with a falling loss, identical weights.
run_site() {
  local site=$1 world=$2
  shift 2
  use_site "$site"
  render "$site" "$work/$site.sbatch" "$@"
  run cl sbatch "$work/$site.sbatch"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output =~ ^Submitted\ batch\ job\ ([0-9]+)$ ]]
  id=${BASH_REMATCH[1]}
  wait_job "$id" 240
  log=$(cat "$work/$site-$id.out")
  echo "$log"
  # torchrun's workers print through its tee: "[default0]:" in front.
  grep -qE "^(\[default0\]:)?start world $world backend gloo device cpu samples 256 epochs 2 restart 0$" <<<"$log"
  local l1 l2
  l1=$(grep -oE "epoch 1/2 loss [0-9.]+ world $world " <<<"$log" | awk '{print $4}')
  l2=$(grep -oE "epoch 2/2 loss [0-9.]+ world $world " <<<"$log" | awk '{print $4}')
  [[ -n $l1 && -n $l2 ]]
  awk -v a="$l1" -v b="$l2" 'BEGIN { exit !(b < a) }'
  grep -qE "^(\[default0\]:)?weights identical on $world ranks$" <<<"$log"
}

# job_gres ID GRES: Slurm allocated job ID the GPUs GRES (the sum over its nodes, as
# `scontrol show job -d` keeps it after the job ends): the site's fake devices were scheduled.
job_gres() {
  local detail
  detail=$(cl scontrol show job -d "$1")
  grep -qxE " +JOB_GRES=$2" <<<"$detail" || { echo "$detail" >&2; return 1; }
}

# refused SITE MESSAGE SBATCH_ARGS...: sbatch --test-only with these arguments fails, saying
# MESSAGE.
refused() {
  local site=$1 message=$2
  shift 2
  run cl sbatch --test-only "$@"
  echo "$output"
  [ "$status" -ne 0 ]
  grep -qF -- "$message" <<<"$output"
}

# ddpgen_refuses SITE MESSAGE [--set K=V ...]: ddpgen refuses the site's job with these
# overrides, saying MESSAGE: it catches before submission what the emulated sbatch refuses.
ddpgen_refuses() {
  local site=$1 message=$2
  shift 2
  run "$DDPGEN" --profile "$site" "$k_sites/$site/job.yaml" --set "script=$k_example" "$@"
  echo "$output"
  [ "$status" -ne 0 ]
  grep -F -- "$message" <<<"$output" | grep -q '^ddpgen: error: '
}

# --- CSC Puhti: partitions gpu/gputest, gres gpu:v100 and nvme, account required -------------

@test "puhti: sbatch accepts the full-node script (4x V100, 40 cores, 320G, --account)" {
  full_node puhti 80 'node\[01-02\]' gpu --account=project_2001234 --partition=gpu \
    --cpus-per-task=40 --mem=320G --gres=gpu:v100:4
}

@test "puhti: torchrun job with 1 V100 per node trains to completion (module pytorch stub)" {
  run_site puhti 2 --set gpus_per_node=1
  grep -qx '#SBATCH --gres=gpu:v100:1' "$work/puhti.sbatch"
  grep -q '^pytorch/1.13: site-emulation stub' <<<"$log"
  job_gres "$id" 'gpu:v100:2'
}

@test "puhti: sbatch refuses an A100, 30 min in gputest, too much NVMe, no account" {
  use_site puhti
  local s=$work/puhti-full.sbatch
  render puhti "$s"
  refused puhti 'Requested node configuration is not available' --gres=gpu:a100:1 "$s"
  refused puhti 'Requested time limit is invalid' --partition=gputest --time=30:00 "$s"
  ddpgen_refuses puhti '--set time=30:00: partition "gputest" allows at most 00:15:00 (max_time)' \
    --set partition=gputest --set time=30:00
  # Node-local disk is a GRES in GB: 3600 per node exists, 4000 does not.
  run cl sbatch --test-only --gres=gpu:v100:4,nvme:3600 "$s"
  [ "$status" -eq 0 ]
  refused puhti 'Requested node configuration is not available' --gres=gpu:v100:4,nvme:4000 "$s"
  refused puhti 'emulated CSC rule: no project given; add --account=project_<id>' \
    --partition=gpu --time=5 --wrap=true
  ddpgen_refuses puhti '--set account=: profile "puhti" requires an account' --set account=
}

# --- CSC Mahti: gpusmall/gpumedium/gputest, gres gpu:a100 and nvme, account required ---------

@test "mahti: sbatch accepts the full-node script (2 nodes -> gpumedium, 4x A100, 128 cores)" {
  full_node mahti 256 'node\[01-02\]' gpumedium --account=project_2001234 \
    --partition=gpumedium --ntasks-per-node=4 --cpus-per-task=32 --gres=gpu:a100:4
}

@test "mahti: srun job with 2 A100s per node trains to completion (apptainer stub)" {
  run_site mahti 4 --set gpus_per_node=2
  grep -qx '#SBATCH --gres=gpu:a100:2' "$work/mahti.sbatch"
  grep -q '^pytorch/1.13: site-emulation stub' <<<"$log"
  # One container per task: 2 nodes x 2 tasks.
  [ "$(grep -c '^apptainer: site-emulation stub (no container runtime here): exec: image /appl/soft/ai/wrap/pytorch-2.4/container.sif not used' <<<"$log")" -eq 4 ]
  job_gres "$id" 'gpu:a100:4'
}

@test "mahti: sbatch refuses a V100, 2 nodes in gpusmall, no account" {
  use_site mahti
  local s=$work/mahti-full.sbatch
  render mahti "$s"
  refused mahti 'Requested node configuration is not available' --gres=gpu:v100:1 "$s"
  refused mahti 'Node count specification invalid' --partition=gpusmall "$s"
  ddpgen_refuses mahti 'partition "gpusmall" allows at most 1 node (max_nodes); the job asks for 2' \
    --set partition=gpusmall
  refused mahti 'emulated CSC rule: no project given' --partition=gpusmall --time=5 --wrap=true
}

# --- TUNI Narvi: partition gpu, V100 and P100 nodes, gpumem_* features ------------------------

@test "narvi: sbatch accepts the full-node script (4x V100, 20 cores)" {
  full_node narvi 40 'node\[01-02\]' gpu --partition=gpu --cpus-per-task=20 --gres=gpu:v100:4
}

@test "narvi: torchrun job with 1 V100 per node trains to completion (module CUDA stub)" {
  run_site narvi 2 --set gpus_per_node=1
  grep -q '^CUDA/11.2: site-emulation stub' <<<"$log"
  job_gres "$id" 'gpu:v100:2'
}

@test "narvi: sbatch refuses the old teslav100 name, a 32 GB P100, 5 GPUs per node" {
  use_site narvi
  local s=$work/narvi-full.sbatch
  render narvi "$s"
  refused narvi 'Requested node configuration is not available' --gres=gpu:teslav100:4 "$s"
  refused narvi 'Requested node configuration is not available' --nodes=1 \
    --gres=gpu:p100:1 --constraint=gpumem_32 "$s"
  refused narvi 'Requested node configuration is not available' --gres=gpu:v100:5 "$s"
  ddpgen_refuses narvi '"gpus_per_node" is 5, but nodes of partition "gpu" have 4 GPUs' \
    --set gpus_per_node=5
}

# --- KAUST Ibex: partition batch, GPU type by --constraint, --gpus-per-node, time required ---

@test "ibex: sbatch accepts the full-node script (--constraint=v100&gpu_ai, 8 GPUs per node)" {
  full_node ibex 80 'node\[01-02\]' batch --partition=batch '--constraint=v100&gpu_ai' \
    --gpus-per-node=8 --ntasks-per-node=8 --cpus-per-task=5
}

@test "ibex: srun job with 1 GPU per node trains to completion (machine_learning, singularity stubs)" {
  run_site ibex 2 --set gpus_per_node=1
  grep -qx '#SBATCH --gpus-per-node=1' "$work/ibex.sbatch"
  grep -q '^machine_learning/2024.08: site-emulation stub' <<<"$log"
  grep -q '^singularity/3.9: site-emulation stub' <<<"$log"
  [ "$(grep -c '^singularity: site-emulation stub (no container runtime here): exec: image /ibex/user/me/pytorch.sif not used' <<<"$log")" -eq 2 ]
  job_gres "$id" 'gpu:v100:2'
}

@test "ibex: sbatch refuses an unknown GPU feature, 2 A100 nodes, a job without a time limit" {
  use_site ibex
  local s=$work/ibex-full.sbatch
  render ibex "$s"
  refused ibex 'Invalid feature specification' --constraint=p100 "$s"
  ddpgen_refuses ibex 'no partition of profile "ibex" has GPU type "p100"' --set gpu_type=p100
  refused ibex 'Requested node configuration is not available' '--constraint=a100&4gpus' \
    --gpus-per-node=1 "$s"
  refused ibex 'Time limit specification required, but not provided' --wrap=true
}

# --- AWS ParallelCluster + EFA: queue gpu, untyped gres gpu:8, --exclusive, pyxis ----------

@test "parallelcluster-efa: sbatch accepts the full-node script (3 nodes, gpu:8, --exclusive)" {
  full_node parallelcluster-efa 288 'node\[01-03\]' gpu --partition=gpu --gres=gpu:8 \
    --cpus-per-task=96 --exclusive --wait-all-nodes=1
}

@test "parallelcluster-efa: torchrun job in a pyxis image trains to completion (srun stub)" {
  run_site parallelcluster-efa 3 --set gpus_per_node=1
  grep -qx '#SBATCH --gres=gpu:1' "$work/parallelcluster-efa.sbatch"
  grep -q '^srun: pyxis site-emulation stub (no enroot here): ignored --container-image=nvcr.io#nvidia/pytorch:24.07-py3 --container-mounts=/fsx:/fsx' <<<"$log"
  # --exclusive: each node is the job's, all 8 GPUs included.
  job_gres "$id" 'gpu:24'
}

@test "parallelcluster-efa: sbatch refuses another queue name, 9 GPUs, a typed GPU" {
  use_site parallelcluster-efa
  local s=$work/parallelcluster-efa-full.sbatch
  render parallelcluster-efa "$s"
  refused parallelcluster-efa 'invalid partition specified: compute' --partition=compute "$s"
  ddpgen_refuses parallelcluster-efa 'profile "parallelcluster-efa" has no partition "compute"' \
    --set partition=compute
  refused parallelcluster-efa 'Requested node configuration is not available' --gres=gpu:9 "$s"
  ddpgen_refuses parallelcluster-efa '"gpus_per_node" is 9, but nodes of partition "gpu" have 8 GPUs' \
    --set gpus_per_node=9
  refused parallelcluster-efa 'Requested node configuration is not available' --gres=gpu:a100:1 "$s"
}
