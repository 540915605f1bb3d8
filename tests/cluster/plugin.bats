#!/usr/bin/env bats
# --ddp on a real Slurm: values in every task, step scope, layouts, modes, refusals, ports, and
# a real torch.distributed rendezvous. The cluster (node01..node03, 10.77.N.11-13) is started
# by the cluster_up ctest fixture with the freshly built plugin.

load lib

# The variables each mode exports, in the order the tests print them.
TASK_VARS='$SLURM_PROCID $(hostname) $MASTER_ADDR $MASTER_PORT $WORLD_SIZE $RANK $LOCAL_RANK $LOCAL_WORLD_SIZE $NODE_RANK $GROUP_RANK $NNODES'

setup() {
  skip_unless_cluster
  "$CLUSTER" set-plugstack ""
}

# Prints one line per task, sorted by host, then LOCAL_RANK: not by SLURM_PROCID, which a Slurm
# 26.05 site with a topology plugin numbers in topology order (cluster.sh up --topology).
task_table() {
  "$CLUSTER" run srun "$@" bash -c "echo $TASK_VARS" | sort -k2,2 -k7,7n
}

# "HOST LOCAL_RANK SLURM_PROCID" of task_table's output: to compare with slurm_layout.
procids_of() {
  awk '{print $2, $7, $1}' <<<"$1"
}

# Runs CMD on the login host under the plugstack.conf arguments ARGS, then restores the
# defaults (setup() restores them too, for a test that stops early). Sets $status and $output.
run_with_plugstack() {
  local args=$1
  shift
  "$CLUSTER" set-plugstack "$args"
  run "$CLUSTER" run "$@"
  "$CLUSTER" set-plugstack ""
}

@test "3 nodes x 2 tasks: every variable, in every task" {
  run task_table -N3 --ntasks-per-node=2 --ddp
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 6 ]
  port=$(awk '{print $4}' <<<"$output" | sort -u)
  [ "$(wc -l <<<"$port")" -eq 1 ]                 # one port, agreed by all tasks
  # Where Slurm reserves ports for every step (the cluster's MpiParams=ports=12000-12999), the
  # first of the step's own; else one of the plugin's default window, below the ephemeral range.
  reserved=$("$CLUSTER" run srun -N1 -n1 printenv SLURM_STEP_RESV_PORTS || true)
  if [[ -n $reserved ]]; then
    (( port >= 12000 && port <= 12999 ))
  else
    (( port >= 20000 && port <= 30999 ))
  fi
  # Ranks by node along the node list, RANK 0 on node01 where MASTER_ADDR points.
  expected="node01 $SUBNET.11 $port 6 0 0 2 0 0 3
node01 $SUBNET.11 $port 6 1 1 2 0 0 3
node02 $SUBNET.11 $port 6 2 0 2 1 1 3
node02 $SUBNET.11 $port 6 3 1 2 1 1 3
node03 $SUBNET.11 $port 6 4 0 2 2 2 3
node03 $SUBNET.11 $port 6 5 1 2 2 2 3"
  diff <(echo "$expected") <(cut -d' ' -f2- <<<"$output")
  # SLURM_PROCID as Slurm numbers the tasks of that shape without --ddp: equal to RANK unless
  # the site lays tasks out in topology order.
  diff <(slurm_layout -N3 --ntasks-per-node=2) <(procids_of "$output")
}

@test "without --ddp no DDP variable is set" {
  run "$CLUSTER" run srun -N3 -n3 bash -c \
    'env | grep -cE "^(MASTER_ADDR|MASTER_PORT|WORLD_SIZE|RANK|LOCAL_RANK|LOCAL_WORLD_SIZE|NODE_RANK|GROUP_RANK|NNODES|NPROC_PER_NODE|PET_[A-Z_]+)=" || true'
  [ "$status" -eq 0 ]
  [ "$output" = $'0\n0\n0' ]
}

# select/linear spreads the 5 tasks 2/2/1; select/cons_tres (a topology site) packs them
# otherwise, 3/1/1 or so. Whatever Slurm chose (its layout of the same step without --ddp), each
# node's LOCAL_WORLD_SIZE is its own count and RANK runs node by node along the list.
@test "uneven layout: -n5 on 3 nodes gives each node its own LOCAL_WORLD_SIZE" {
  layout=$(slurm_layout -N3 -n5)
  # host:LOCAL_WORLD_SIZE:LOCAL_RANK:RANK:SLURM_PROCID, RANK being the line's place.
  expected=$(awk '{ host[NR] = $1; local[NR] = $2; procid[NR] = $3; count[$1]++ }
    END { for (i = 1; i <= NR; i++) print host[i] ":" count[host[i]] ":" local[i] ":" i - 1 ":" procid[i] }' <<<"$layout")
  [ "$(cut -d: -f1 <<<"$expected" | sort -u | paste -sd ' ')" = "node01 node02 node03" ]
  [ "$(cut -d: -f1,2 <<<"$expected" | sort -u | cut -d: -f2 | sort -u | wc -l)" -gt 1 ]  # uneven
  run task_table -N3 -n5 --ddp
  [ "$status" -eq 0 ]
  diff <(echo "$expected") <(awk '{print $2 ":" $8 ":" $7 ":" $6 ":" $1}' <<<"$output")
  [ "$(awk '{print $5}' <<<"$output" | sort -u)" = 5 ]
}

@test "step scope: a step on 2 of the job's 3 nodes gets those nodes' head and counts" {
  run "$CLUSTER" run salloc -N3 srun -N2 -r1 --ntasks-per-node=1 --ddp bash -c "echo $TASK_VARS"
  [ "$status" -eq 0 ]
  out=$(grep -E '^[0-9]+ node' <<<"$output" | sort -n)
  port=$(awk 'NR==1{print $4}' <<<"$out")
  diff <(printf '%s\n' "0 node02 $SUBNET.12 $port 2 0 0 1 0 0 2" "1 node03 $SUBNET.12 $port 2 1 0 1 1 1 2") \
       <(echo "$out")
}

@test "#SBATCH --ddp reaches every srun step, never the batch shell" {
  dir=$(mktemp -d /tmp/ddp-sbatch.XXXXXX)
  cat >"$dir/job.sh" <<EOS
#!/bin/bash
#SBATCH -N3 --ntasks-per-node=2 --ddp
#SBATCH --output=$dir/out
echo "batch MASTER_ADDR=\${MASTER_ADDR:-unset} RANK=\${RANK:-unset}"
srun bash -c 'echo "task \$RANK/\$WORLD_SIZE on \$(hostname) master \$MASTER_ADDR"'
EOS
  jobid=$("$CLUSTER" run sbatch --parsable "$dir/job.sh")
  wait_job "$jobid" 120
  run cat "$dir/out"
  grep -qx 'batch MASTER_ADDR=unset RANK=unset' "$dir/out"
  [ "$(grep -c "^task .*/6 on node0[1-3] master $SUBNET.11\$" "$dir/out")" -eq 6 ]
  [ "$(grep '^task ' "$dir/out" | awk '{print $2}' | sort -n | tr '\n' ' ')" = "0/6 1/6 2/6 3/6 4/6 5/6 " ]
  rm -rf "$dir"
}

@test "salloc --ddp reaches every srun step of the allocation, never its shell" {
  # shellcheck disable=SC2016  # expanded in the allocation's shell and in the tasks
  run "$CLUSTER" run salloc -N2 --ddp bash -c \
    'echo "shell ${MASTER_ADDR:-unset}"; srun --ntasks-per-node=1 bash -c "echo step \$RANK \$WORLD_SIZE \$MASTER_ADDR"'
  [ "$status" -eq 0 ]
  [[ "$output" == *"shell unset"* ]]
  diff <(printf '%s\n' "step 0 2 $SUBNET.11" "step 1 2 $SUBNET.11") <(grep '^step ' <<<"$output" | sort)
}

@test "torchrun mode: one launcher per node with torchrun's own variables" {
  run "$CLUSTER" run srun -N3 --ntasks-per-node=1 --ddp=torchrun bash -c \
    'echo $(hostname) $MASTER_ADDR $NNODES $NODE_RANK $GROUP_RANK $NPROC_PER_NODE $WORLD_SIZE $PET_NNODES $PET_NODE_RANK $PET_NPROC_PER_NODE $PET_MASTER_ADDR $PET_MASTER_PORT ${RANK:-norank} $MASTER_PORT'
  [ "$status" -eq 0 ]
  out=$(sort <<<"$output")
  port=$(awk 'NR==1{print $NF}' <<<"$out")
  diff <(printf '%s\n' "node01 $SUBNET.11 3 0 0 1 3 3 0 1 $SUBNET.11 $port norank $port" \
                       "node02 $SUBNET.11 3 1 1 1 3 3 1 1 $SUBNET.11 $port norank $port" \
                       "node03 $SUBNET.11 3 2 2 1 3 3 2 1 $SUBNET.11 $port norank $port") \
       <(echo "$out")
}

@test "torchrun mode: NPROC_PER_NODE follows DDP_NPROC_PER_NODE and SLURM_GPUS_ON_NODE" {
  run "$CLUSTER" run env DDP_NPROC_PER_NODE=4 srun -N2 --ntasks-per-node=1 --ddp=torchrun \
    bash -c 'echo $NPROC_PER_NODE $PET_NPROC_PER_NODE $WORLD_SIZE'
  [ "$status" -eq 0 ]
  [ "$output" = $'4 4 8\n4 4 8' ]
}

@test "torchrun mode refuses more than one task per node before anything runs" {
  run "$CLUSTER" run srun -N3 -n6 --ddp=torchrun bash -c 'echo RAN'
  [ "$status" -ne 0 ]
  [[ "$output" == *"--ddp=torchrun starts one torchrun launcher per node"* ]]
  [[ "$output" == *"--ntasks-per-node=1"* ]]
  [[ "$output" != *RAN* ]]
}

@test "an unknown mode is refused by srun and sbatch, naming --ddp and the valid modes" {
  run "$CLUSTER" run srun -N1 --ddp=foo bash -c 'echo RAN'
  [ "$status" -ne 0 ]
  [[ "$output" == *"--ddp=foo: unknown mode (valid: tasks, torchrun)"* ]]
  [[ "$output" != *RAN* ]]
  run "$CLUSTER" run sbatch --ddp=bar --wrap true
  [ "$status" -ne 0 ]
  [[ "$output" == *"--ddp=bar: unknown mode (valid: tasks, torchrun)"* ]]
  [[ "$output" != *"Submitted batch job"* ]]
}

@test "an unknown plugstack.conf key refuses --ddp and names the key" {
  run_with_plugstack "port_range=20000-30999 colour=blue" srun -N1 --ddp bash -c 'echo RAN'
  [ "$status" -ne 0 ]
  [[ "$output" == *'"colour"'* ]]
  [[ "$output" != *RAN* ]]
}

@test "a bad plugstack.conf value names the key and the value" {
  run_with_plugstack "port_range=40000-30000" srun -N1 --ddp bash -c 'echo RAN'
  [ "$status" -ne 0 ]
  [[ "$output" == *port_range* ]]
  [[ "$output" == *40000-30000* ]]
}

@test "concurrent steps of one job get distinct ports, without and with reserved ports" {
  # On Slurm 22.05 with MpiParams=ports a bare --resv-ports reserves nothing (the derived port
  # is used), and --resv-ports=1 reserves one port per step (SLURM_STEP_RESV_PORTS is used).
  for resv in "--resv-ports" "--resv-ports=1"; do
    run_again_after_slurmd_crash "$CLUSTER" run salloc -N3 bash -c "
      for i in 1 2 3 4; do srun -N3 --ntasks-per-node=1 --overlap $resv --ddp bash -c 'echo \$SLURM_STEP_ID \$MASTER_PORT' & done; wait"
    [ "$status" -eq 0 ]
    steps=$(grep -E '^[0-9]+ [0-9]+$' <<<"$output" | sort -u)
    [ "$(wc -l <<<"$steps")" -eq 4 ]                          # each step: one port on all nodes
    [ "$(awk '{print $2}' <<<"$steps" | sort -u | wc -l)" -eq 4 ]  # and no two steps share one
    if [ "$resv" = --resv-ports=1 ]; then
      awk '{ if ($2 < 12000 || $2 > 12999) exit 1 }' <<<"$steps"
    else
      awk '{ if ($2 < 20000 || $2 > 30999) exit 1 }' <<<"$steps"
    fi
  done
}

@test "steps of different jobs running at once get distinct ports" {
  dir=$(mktemp -d /tmp/ddp-ports.XXXXXX)
  for j in 1 2 3; do
    "$CLUSTER" run sbatch --parsable -N3 --ntasks-per-node=1 --output="$dir/$j" \
      --wrap "srun --ddp bash -c 'echo \$MASTER_PORT; sleep 2'" >"$dir/id$j"
  done
  for j in 1 2 3; do wait_job "$(cat "$dir/id$j")" 120; done
  for j in 1 2 3; do [ "$(sort -u "$dir/$j" | wc -l)" -eq 1 ]; done
  [ "$(cat "$dir"/1 "$dir"/2 "$dir"/3 | sort -u | wc -l)" -eq 3 ]
  rm -rf "$dir"
}

@test "a heterogeneous step is refused with a message, never given wrong values" {
  covered_for_the_installed_files_by "the unknown mode and plugstack.conf refusals"
  run "$CLUSTER" run srun -N1 --ddp bash -c 'echo RAN $RANK' : -N1 --ddp bash -c 'echo RAN $RANK'
  [ "$status" -ne 0 ]
  [[ "$output" == *"heterogeneous steps are not supported by --ddp (SLURM_HET_SIZE=2)"* ]]
  [[ "$output" != *RAN* ]]
}

@test "DDP_MASTER_PORT overrides the port" {
  run "$CLUSTER" run env DDP_MASTER_PORT=23456 srun -N3 --ddp bash -c 'echo $MASTER_PORT'
  [ "$status" -eq 0 ]
  [ "$output" = $'23456\n23456\n23456' ]
}

@test "host_suffix is applied before resolving, and an unresolvable head fails clearly" {
  run_with_plugstack "host_suffix=-nosuchnet" srun -N2 --ddp bash -c 'echo RAN'
  [ "$status" -ne 0 ]
  [[ "$output" == *'node01-nosuchnet'* ]]
  [[ "$output" != *RAN* ]]
}

@test "addr=hostname exports the head node's name" {
  run_with_plugstack "addr=hostname" srun -N3 --ddp bash -c 'echo $MASTER_ADDR'
  [ "$status" -eq 0 ]
  [ "$output" = $'node01\nnode01\nnode01' ]
}

@test "networks= that matches none of the head's addresses is refused with what it resolved to" {
  run_with_plugstack "networks=192.0.2.0/24" srun -N2 --ddp bash -c 'echo RAN'
  [ "$status" -ne 0 ]
  [[ "$output" == *"$SUBNET.11"* ]]
  [[ "$output" != *RAN* ]]
}

@test "site env_file: applied to --ddp tasks, the user's own value wins" {
  envfile=$(mktemp /tmp/ddp-env.XXXXXX)
  printf '# site NCCL settings\nNCCL_DEBUG=WARN\nexport NCCL_SOCKET_IFNAME==eth0\n' >"$envfile"
  "$CLUSTER" set-plugstack "env_file=$envfile"
  run "$CLUSTER" run env NCCL_DEBUG=INFO srun -N1 --ddp bash -c 'echo $NCCL_DEBUG $NCCL_SOCKET_IFNAME'
  run2=$("$CLUSTER" run srun -N1 bash -c 'echo ${NCCL_SOCKET_IFNAME:-unset}')
  "$CLUSTER" set-plugstack ""
  rm -f "$envfile"
  [ "$status" -eq 0 ]
  [ "$output" = "INFO =eth0" ]
  [ "$run2" = unset ]
}

@test "gloo all-reduce across 3 nodes x 2 tasks in tasks mode" {
  run "$CLUSTER" run srun -N3 --ntasks-per-node=2 --ddp /usr/bin/python3 "$REPO/contrib/examples/allreduce.py"
  [ "$status" -eq 0 ]
  # Rank 0 on the list's first node, at its address, whatever order Slurm gave the tasks.
  [ "$(allreduce_ranks 6 "$SUBNET\.11:[0-9]+" <<<"$output")" = "0 1 2 3 4 5" ]
  grep -E '^rank=0 .* host=node01 ' <<<"$output"
}

@test "gloo all-reduce through a bare torchrun in torchrun mode" {
  covered_for_the_installed_files_by "\"torchrun mode: one launcher per node\" and the all-reduce in tasks mode"
  # PET_REDIRECTS/PET_TEE work around Debian's torch 1.13 on Python 3.11, where torchrun's
  # default Std.from_str() returns None; they are torchrun's own environment fallbacks.
  run "$CLUSTER" run env DDP_NPROC_PER_NODE=2 PET_REDIRECTS=1 PET_TEE=1 \
    srun -N3 --ntasks-per-node=1 --ddp=torchrun torchrun "$REPO/contrib/examples/allreduce.py"
  [ "$status" -eq 0 ]
  [ "$(allreduce_ranks 6 <<<"$output")" = "0 1 2 3 4 5" ]
}
