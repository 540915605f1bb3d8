#!/usr/bin/env bats
# Containers for real: Apptainer (Debian unstable's, in the userland of `cluster.sh up --slurm
# 26.05`) runs the tasks of an `srun --ddp` step inside a sandbox image built here, with no
# network, from the userland's own files (python3 and python3-torch as the userland installed
# them). Checks that every task sees --ddp's variables inside the container, and that the job
# ddpgen renders with `container: {runtime: apptainer, ...}` trains contrib/examples/autoencoder.py
# on 3 nodes x 2 ranks in it.
#
# Needs the cluster (fixture), ddpgen, and apptainer where the cluster's jobs run; where it is
# missing or cannot start a container (no user or mount namespaces, a kernel that refuses), every
# test skips with apptainer's own words.

bats_require_minimum_version 1.5.0
load lib

k_example=$REPO/contrib/examples/autoencoder.py
k_job_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

setup_file() {
  APPTAINER_WORK=$(mktemp -d /tmp/ddp-apptainer.XXXXXX)
  export APPTAINER_WORK
}

teardown_file() {
  # The sandbox's files are hard links into the userland: removing them removes links only.
  rm -rf "${APPTAINER_WORK:?}"
}

setup() {
  skip_unless_cluster
  need_ddpgen
  work=$APPTAINER_WORK
  sandbox=$work/torch.sandbox
  local why
  why=$(cl apptainer --version 2>&1) ||
    skip "apptainer is not installed where the cluster's jobs run (Debian unstable's userland has it: cluster.sh up --slurm 26.05): $why"
  [[ -d $sandbox ]] || build_sandbox
}

# The jobs of this cluster run as root. Root's full capability set is what a site's users never
# have, and where this machine's bounding set lacks one (CAP_SYS_RESOURCE in some containers)
# apptainer refuses to start ("Requesting capability set ..."): --no-privs, through apptainer's
# environment, gives the container an ordinary user's (none).
k_no_privs=APPTAINER_NO_PRIVS=1

# The root of the userland the cluster's jobs run in: the chroot of DDP_SLURM_RELEASE, else /.
userland_root() {
  if [[ -n ${DDP_SLURM_RELEASE:-} ]]; then
    "$REPO/tests/cluster/userland.sh" root "$DDP_SLURM_RELEASE"
  else
    echo /
  fi
}

# Builds $sandbox with `apptainer build --sandbox` from a definition that starts from scratch and
# hard-links the userland's system directories in (a second or two, no copy, no network), then
# proves a container starts; skips with apptainer's message when none can.
build_sandbox() {
  local root def=$work/torch.def why
  root=$(userland_root) || skip "the userland of Slurm $DDP_SLURM_RELEASE is not made"
  cat >"$def" <<EOF
Bootstrap: scratch

%setup
    cd '$root'
    for d in usr etc var bin lib lib64 sbin; do
        [ -e "\$d" ] && cp -al --no-clobber "\$d" "\$APPTAINER_ROOTFS/"
    done
    true

%environment
    export DDP_TEST_IMAGE=torch.sandbox
EOF
  why=$(cl apptainer build --sandbox "$sandbox.new" "$def" 2>&1) ||
    skip "apptainer cannot build a sandbox from the userland here: $(tail -n 3 <<<"$why")"
  mv "$sandbox.new" "$sandbox"
  why=$(cl env "$k_no_privs" apptainer exec "$sandbox" /usr/bin/python3 -c 'import torch' 2>&1) ||
    skip "apptainer cannot start a container here: $(tail -n 3 <<<"$why")"
}

@test "every task of srun --ddp sees the DDP variables inside the container" {
  local fmt='$SLURM_PROCID $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT $DDP_TEST_IMAGE'
  run cl env "$k_no_privs" srun -N3 --ntasks-per-node=2 --ddp \
    apptainer exec "$sandbox" /bin/sh -c "echo $fmt \$(hostname)"
  echo "$output"
  [ "$status" -eq 0 ]
  local lines
  # By RANK: ranks run node by node along the node list, whatever order Slurm numbered the
  # tasks in (Slurm 26.05 at a topology site starts task 0 elsewhere).
  lines=$(grep -E '^[0-9]+ ' <<<"$output" | sort -k2,2n)
  [ "$(wc -l <<<"$lines")" -eq 6 ]
  local procid rank local_rank world local_world addr port image host n=0 procids=""
  while read -r procid rank local_rank world local_world addr port image host; do
    [ "$rank" = "$n" ]
    [ "$local_rank" = $((rank % 2)) ]
    [ "$world" = 6 ]
    [ "$local_world" = 2 ]
    # Rank 0's node is the head node: node01 at .11.
    [ "$addr" = "$SUBNET.11" ]
    [[ $port =~ ^[0-9]+$ ]]
    # Set by the image's %environment: the command ran inside the container.
    [ "$image" = torch.sandbox ]
    [ "$host" = "node0$((rank / 2 + 1))" ]
    procids+="$host $local_rank $procid"$'\n'
    n=$((n + 1))
  done <<<"$lines"
  [ "$n" -eq 6 ]
  # SLURM_PROCID is what Slurm gives the same shape without --ddp.
  diff <(slurm_layout -N3 --ntasks-per-node=2) <(printf '%s' "$procids" | sort -k1,1 -k2,2n)
  # One port for the whole step.
  [ "$(awk '{print $7}' <<<"$lines" | sort -u | wc -l)" -eq 1 ]
}

@test "the job ddpgen renders with an apptainer container trains the example in it" {
  cat >"$work/apptainer.yaml" <<'EOF'
# The embedded cluster, with the containers it can run.
extends: local
description: Embedded 3-node test cluster with Apptainer
container:
  runtimes: [apptainer]
EOF
  cat >"$work/job.yaml" <<EOF
name: apptainer-train
nodes: 3
procs_per_node: 2
time: "5"
launcher: srun
script: $k_example
args: [--epochs, "2", --samples, "256"]
output: $work/job-%j.out
container:
  runtime: apptainer
  image: $sandbox
  # The checkout is not inside the image: the example comes in through a mount.
  mounts: [$REPO/contrib/examples]
EOF
  "$DDPGEN" --profile "$work/apptainer.yaml" "$work/job.yaml" -o "$work/job.slurm"
  grep -F "apptainer exec" "$work/job.slurm"
  grep -qF -- "--bind $REPO/contrib/examples $sandbox" "$work/job.slurm"
  local id log
  id=$(cd "$work" && cl env "$k_no_privs" PATH="$k_job_path" sbatch --parsable job.slurm)
  wait_job "$id" 120 || { cat "$work/job-$id.out" >&2; return 1; }
  log=$(cat "$work/job-$id.out")
  echo "$log"
  grep -qx "start world 6 backend gloo device cpu samples 256 epochs 2 restart 0" <<<"$log"
  local l1 l2
  l1=$(grep -oE "^epoch 1/2 loss [0-9.]+ world 6 " <<<"$log" | awk '{print $4}')
  l2=$(grep -oE "^epoch 2/2 loss [0-9.]+ world 6 " <<<"$log" | awk '{print $4}')
  [[ -n $l1 && -n $l2 ]]
  awk -v a="$l1" -v b="$l2" 'BEGIN { exit !(b < a) }'
  grep -qx "weights identical on 6 ranks" <<<"$log"
}
