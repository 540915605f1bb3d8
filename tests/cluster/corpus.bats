#!/usr/bin/env bats
# The real-world corpus on the embedded cluster (tests/corpus, doc/corpus.md): every job file
# that replaces a public multi-node training script is rendered with its own site profile,
# fitted to the three CPU nodes (the profile's node and partitions replaced, 2 nodes x 2
# processes, no GPUs) and with the program replaced by tests/corpus/ddp_env_check.py, which
# checks what every process of the job's own launch pattern sees (RANK, LOCAL_RANK, WORLD_SIZE,
# MASTER_ADDR, MASTER_PORT) and makes all of them meet over TCP at MASTER_ADDR. What the sites
# have and this machine has not (modules, conda, Shifter, pyxis, the Container Engine,
# accelerate, mpirun, DCGM) are stubs that say so in the job's log (tests/corpus/stubs,
# tests/cluster/sites/stubs). What each case changes beyond that is in its cluster.args.
#
# All jobs are submitted at once in setup_file; each test waits for its own and checks its log.
# Needs the cluster (fixture), ddpgen and Debian's python3-torch (the torchrun cases).
# DDP_CORPUS_KEEP=1 keeps the rendered scripts and the logs.

bats_require_minimum_version 1.5.0
load lib

k_corpus=$REPO/tests/corpus
k_check=$k_corpus/ddp_env_check.py
k_job_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# The cases: every directory with a job file, as tests/corpus/CMakeLists.txt registers them
# (doc/corpus.md lists the scripts ddpgen cannot express yet, which have none).
k_cases=()
for k_job in "$k_corpus"/*/job.yaml; do
  k_job=${k_job%/job.yaml}
  k_cases+=("${k_job##*/}")
done
unset k_job

setup_file() {
  CORPUS_WORK=$(mktemp -d /tmp/ddp-corpus.XXXXXX)
  export CORPUS_WORK CORPUS_START=$SECONDS
  # The prerequisites are looked at once, here (importing torch takes seconds); each test skips
  # or fails with the reason found.
  local why
  if ! why=$("$CLUSTER" check 2>&1); then
    echo "cluster prerequisite missing: $why" >"$CORPUS_WORK/skip"
    return 0
  fi
  if ! "$CLUSTER" status >/dev/null 2>&1; then
    echo "the embedded cluster is not up: start it with $CLUSTER up" >"$CORPUS_WORK/down"
    return 0
  fi
  if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    echo "Debian's python3-torch is not installed (bash contrib/install-deps.sh)" >"$CORPUS_WORK/skip"
    return 0
  fi
  if ! find_ddpgen; then
    echo "ddpgen not built (cmake --build build) and not on PATH; or set DDPGEN" >"$CORPUS_WORK/skip"
    return 0
  fi
  make_stand_ins
  local name
  for name in "${k_cases[@]}"; do submit_case "$name"; done
}

teardown_file() {
  echo "# corpus: ${#k_cases[@]} jobs in $((SECONDS - CORPUS_START)) s" >&3
  [[ ${DDP_CORPUS_KEEP:-0} == 1 ]] || rm -rf "${CORPUS_WORK:?}"
}

setup() {
  work=$CORPUS_WORK
  if [[ -f $work/skip ]]; then skip "$(<"$work/skip")"; fi
  if [[ -f $work/down ]]; then cat "$work/down" >&2; return 1; fi
}

# Sets DDPGEN as need_ddpgen does, without skipping (setup_file runs before any test).
find_ddpgen() {
  if [[ -n ${DDPGEN:-} ]]; then [[ -x $DDPGEN ]]; return; fi
  if [[ -x $REPO/build/gen/ddpgen ]]; then DDPGEN=$REPO/build/gen/ddpgen; return 0; fi
  DDPGEN=$(command -v ddpgen)
}

# Stand-ins for what the jobs activate: a script to source and virtualenvs, each of which says
# in the log that it was used; the directory the Nanotron job enters.
make_stand_ins() {
  local venv
  printf 'echo "corpus: sourced the stand-in environment script" >&2\n' >"$CORPUS_WORK/env.sh"
  for venv in venv venv-24.04; do
    mkdir -p "$CORPUS_WORK/$venv/bin"
    printf 'export VIRTUAL_ENV=%s\necho "corpus: activated the stand-in virtualenv $VIRTUAL_ENV" >&2\n' \
      "$CORPUS_WORK/$venv" >"$CORPUS_WORK/$venv/bin/activate"
  done
  mkdir -p "$CORPUS_WORK/nanotron"
}

# The case's profile fitted to the embedded cluster: its node and partitions replaced by the
# cluster's (a partition the site chooses stays one: the cluster's default is debug), no
# account required, no CPUs or memory per GPU. Everything else (plugin or not, modules,
# containers, environment, variables) is the site's.
cluster_profile() {
  local dir=$k_corpus/$1 profile site_chooses=''
  profile=$(<"$dir/profile")
  if [[ $profile == */* ]]; then
    profile=$dir/$profile
    if grep -q 'site_chooses: true' "$profile"; then site_chooses=', site_chooses: true'; fi
  fi
  cat <<EOF
extends: $profile
description: the corpus case $1 fitted to the embedded cluster
node: {gpus: 0, gpu_type: "", cores: 8, memory_gb: 1}
cpus_per_gpu: 0
mem_per_gpu_gb: 0
account: {required: false}
partitions:
  replace:
    - {name: debug, max_nodes: 3, max_time: "3-00:00:00"$site_chooses}
EOF
}

# The PATH of the case's jobs: its stubs (cluster.stubs: directories under tests/corpus/stubs
# or tests/cluster/sites/stubs), the corpus stubs, the stub python3/torchrun, the system's.
job_path() {
  local dir=$k_corpus/$1 path='' stub
  if [[ -f $dir/cluster.stubs ]]; then
    for stub in $(<"$dir/cluster.stubs"); do
      if [[ -d $k_corpus/stubs/$stub ]]; then path+=$k_corpus/stubs/$stub:
      else path+=$REPO/tests/cluster/sites/stubs/$stub/bin:; fi
    done
  fi
  echo "$path$k_corpus/stubs/bin:$REPO/tests/cluster/sites/stubs/pytorch/bin:$k_job_path"
}

# Renders case NAME for the cluster into $CORPUS_WORK/NAME.sbatch and submits it from
# $CORPUS_WORK; the job id goes to NAME.id, a failure to NAME.failed.
submit_case() {
  local name=$1 dir=$k_corpus/$1 work=$CORPUS_WORK extra=() id
  cluster_profile "$name" >"$work/$name.profile.yaml"
  if [[ -f $dir/cluster.args ]]; then
    mapfile -t extra < <(sed -e '/^#/d' -e '/^$/d' -e "s|@WORK@|$work|g" -e "s|@CHECK@|$k_check|g" "$dir/cluster.args")
  fi
  grep -q '^partition:' "$dir/job.yaml" && extra=(--set partition=debug "${extra[@]}")
  if ! (cd "$dir" && "$DDPGEN" --profile "$work/$name.profile.yaml" job.yaml -o "$work/$name.sbatch" \
          --set nodes=2 --set gpus_per_node=0 --set procs_per_node=2 \
          --set "script=$k_check" --set "args=[--world, \"4\", --rundir, $work]" \
          --set "output=$work/$name-%j.out" --set "error=$work/$name-%j.out" "${extra[@]}") \
        >"$work/$name.failed" 2>&1; then
    return 0
  fi
  # PET_REDIRECTS/PET_TEE: Debian 12's torchrun dies at start without them (site-profiles/local.yaml
  # says why); the jobs that start torch.distributed.run as python's module miss the stub torchrun
  # that sets them.
  if id=$(cd "$work" && cl env PATH="$(job_path "$name")" PET_REDIRECTS=1 PET_TEE=1 \
            sbatch --parsable "$name.sbatch" 2>>"$work/$name.failed"); then
    echo "$id" >"$work/$name.id"
    rm -f "$work/$name.failed"
  fi
}

# check_case NAME: the case's job completed, and its log holds the verdict of a world of 4 on
# node01 and node02, with every rank's line.
check_case() {
  local name=$1 id log
  if [[ -f $work/$name.failed ]]; then cat "$work/$name.failed" >&2; return 1; fi
  id=$(<"$work/$name.id")
  echo "job $id: $work/$name.sbatch"
  wait_job "$id" 240 || { cat "$work/$name-$id.out" >&2; return 1; }
  # Without srun --label's "N: " and torchrun's "[defaultN]:" in front of the lines.
  log=$(sed -E -e 's/^ *[0-9]+: //' -e 's/^\[default[0-9]+\]://' "$work/$name-$id.out")
  echo "$log"
  # Matched, not read line by line: a launcher's tee can write two ranks' lines as one.
  grep -qE 'corpus-check world 4 ok master [^ ]+:[0-9]+ hosts node0[1-3],node0[1-3]' <<<"$log"
  [ "$(grep -oE 'corpus-check rank [0-3] of 4 ok' <<<"$log" | sort -u | wc -l)" -eq 4 ]
}

# Bats 1.8 (Debian 12) cannot make tests from a list: one line per case below, and this test
# fails when a case directory has no line (or a line names no directory).
@test "corpus: every case directory has its test below" {
  local listed
  listed=$(sed -nE 's/^@test "corpus: ([a-z0-9-]+)" \{ check_case \1; \}$/\1/p' "$BATS_TEST_FILENAME")
  diff <(printf '%s\n' "${k_cases[@]}" | sort) <(sort <<<"$listed")
}

@test "corpus: accelerate-multinode-fsdp" { check_case accelerate-multinode-fsdp; }
@test "corpus: alignment-handbook-accelerate" { check_case alignment-handbook-accelerate; }
@test "corpus: alliance-cedar-torchrun-venv" { check_case alliance-cedar-torchrun-venv; }
@test "corpus: aws-ddp-pyxis-cpu" { check_case aws-ddp-pyxis-cpu; }
@test "corpus: bigscience-jeanzay-megatron-deepspeed" { check_case bigscience-jeanzay-megatron-deepspeed; }
@test "corpus: c3se-alvis-torchrun-proepi" { check_case c3se-alvis-torchrun-proepi; }
@test "corpus: chatglm-deepspeed-mpirun" { check_case chatglm-deepspeed-mpirun; }
@test "corpus: csc-mahti-srun-script-args" { check_case csc-mahti-srun-script-args; }
@test "corpus: csc-puhti-accelerate" { check_case csc-puhti-accelerate; }
@test "corpus: csc-puhti-torchrun" { check_case csc-puhti-torchrun; }
@test "corpus: cscs-alps-nanotron-environment" { check_case cscs-alps-nanotron-environment; }
@test "corpus: fairseq-fsdp-srun" { check_case fairseq-fsdp-srun; }
@test "corpus: gpt-neox-deepy-hostfile" { check_case gpt-neox-deepy-hostfile; }
@test "corpus: itwinai-jsc-deepspeed-srun" { check_case itwinai-jsc-deepspeed-srun; }
@test "corpus: jsc-course-torchrun-ib" { check_case jsc-course-torchrun-ib; }
@test "corpus: kisti-neuron-lightning-conda" { check_case kisti-neuron-lightning-conda; }
@test "corpus: lightning-docs-slurm" { check_case lightning-docs-slurm; }
@test "corpus: lumi-ddp-srun-singularity" { check_case lumi-ddp-srun-singularity; }
@test "corpus: lumi-deepspeed-torchrun-singularity" { check_case lumi-deepspeed-torchrun-singularity; }
@test "corpus: megatron-sc21-pyxis" { check_case megatron-sc21-pyxis; }
@test "corpus: mlengineering-lightning-launcher" { check_case mlengineering-lightning-launcher; }
@test "corpus: mlengineering-torchrun-launcher" { check_case mlengineering-torchrun-launcher; }
@test "corpus: mmdetection-slurm-train-srun" { check_case mmdetection-slurm-train-srun; }
@test "corpus: nanotron-torchrun-bash-c" { check_case nanotron-torchrun-bash-c; }
@test "corpus: nersc-perlmutter-shifter-srun" { check_case nersc-perlmutter-shifter-srun; }
@test "corpus: nersc-sc23-shifter-mounts" { check_case nersc-sc23-shifter-mounts; }
@test "corpus: olcf-frontier-deepspeed-pdsh" { check_case olcf-frontier-deepspeed-pdsh; }
@test "corpus: olcf-frontier-srun-conda" { check_case olcf-frontier-srun-conda; }
@test "corpus: olmo-lumi-srun-singularity" { check_case olmo-lumi-srun-singularity; }
@test "corpus: open-clip-stability-srun-efa" { check_case open-clip-stability-srun-efa; }
@test "corpus: openrlhf-pyxis-torchrun-procid" { check_case openrlhf-pyxis-torchrun-procid; }
@test "corpus: princeton-ddp-srun-conda" { check_case princeton-ddp-srun-conda; }
@test "corpus: princeton-lightning-reservation" { check_case princeton-lightning-reservation; }
@test "corpus: pytorch-examples-ddp-torchrun" { check_case pytorch-examples-ddp-torchrun; }
@test "corpus: sigma2-olivia-torchrun-modules" { check_case sigma2-olivia-torchrun-modules; }
@test "corpus: speechbrain-launch-conda" { check_case speechbrain-launch-conda; }
@test "corpus: torchtitan-multinode" { check_case torchtitan-multinode; }
@test "corpus: torchtune-multinode-tune-run" { check_case torchtune-multinode-tune-run; }
@test "corpus: uf-hipergator-srun-singularity" { check_case uf-hipergator-srun-singularity; }
@test "corpus: vector-rtx6000-torchrun-monitor" { check_case vector-rtx6000-torchrun-monitor; }
