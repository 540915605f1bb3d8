#!/usr/bin/env bats
# The embedded cluster itself, without --ddp: hosts, names and addresses, task layout, reserved
# ports, batch jobs, jobs sharing nodes, and a real torch.distributed rendezvous over its
# network. When these fail, the plugin tests cannot mean anything.

bats_require_minimum_version 1.5.0
load lib

setup() {
  skip_unless_cluster
}

@test "srun -N3 -n6 runs two tasks on each of node01..node03" {
  run --separate-stderr cl_srun -N3 -n6 hostname
  [ "$status" -eq 0 ]
  [ "$(sort <<<"$output" | tr '\n' ' ')" = "node01 node01 node02 node02 node03 node03 " ]
}

@test "task ids, local ids and node ids of -N3 -n6 follow Slurm's block layout" {
  run --separate-stderr task_env -N3 -n6 -- hostname SLURM_LOCALID SLURM_NODEID SLURM_NTASKS \
    SLURM_STEP_NUM_NODES SLURM_JOB_NODELIST SLURM_STEP_NODELIST
  [ "$status" -eq 0 ]
  diff <(printf '%s\n' \
    "0 node01 0 0 6 3 node[01-03] node[01-03]" "1 node01 1 0 6 3 node[01-03] node[01-03]" \
    "2 node02 0 1 6 3 node[01-03] node[01-03]" "3 node02 1 1 6 3 node[01-03] node[01-03]" \
    "4 node03 0 2 6 3 node[01-03] node[01-03]" "5 node03 1 2 6 3 node[01-03] node[01-03]") \
    <(echo "$output")
}

@test "every host has its own address and resolves every other host by name" {
  run --separate-stderr cl_srun -N3 bash -c \
    'echo $(hostname) $(ip -4 -o addr show dev eth0 | awk "{print \$4}")'
  [ "$status" -eq 0 ]
  diff <(printf '%s\n' "node01 $SUBNET.11/24" "node02 $SUBNET.12/24" "node03 $SUBNET.13/24") \
    <(sort <<<"$output")
  run --separate-stderr cl_srun -N3 getent ahostsv4 node02
  [ "$status" -eq 0 ]
  [ "$(awk '{print $1}' <<<"$output" | sort -u)" = $SUBNET.12 ]
  run --separate-stderr cl bash -c 'echo $(hostname) $(getent hosts node01 node03 | awk "{print \$1}" | xargs)'
  [ "$output" = "ddp-login $SUBNET.11 $SUBNET.13" ]
}

@test "a name outside the cluster's hosts file does not resolve" {
  run --separate-stderr cl_srun -N1 getent hosts node01-nosuchnet
  [ "$status" -ne 0 ]
  [ -z "$output" ]
}

@test "--resv-ports=2 gives every task of the step the same 2 ports from MpiParams" {
  # A count is needed: a bare --resv-ports reserves nothing on Slurm 22.05.
  run --separate-stderr task_env -N3 --ntasks-per-node=2 --resv-ports=2 -- SLURM_STEP_RESV_PORTS
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 6 ]
  ports=$(awk '{print $2}' <<<"$output" | sort -u)
  [ "$(wc -l <<<"$ports")" -eq 1 ]
  [[ $ports =~ ^([0-9]+)-([0-9]+)$ ]]
  [ "${BASH_REMATCH[1]}" -ge 12000 ]
  [ "${BASH_REMATCH[2]}" -le 12999 ]
  [ $((BASH_REMATCH[2] - BASH_REMATCH[1])) -eq 1 ]
}

@test "Slurm 22.05 with MpiParams=ports: every step has reserved ports unless --resv-ports is bare" {
  # What the plugin sees on such a site: no option gives (tasks per node + 1) ports, while a
  # bare --resv-ports (a count of 0) reserves none at all.
  run --separate-stderr task_env -N3 --ntasks-per-node=2 -- SLURM_STEP_RESV_PORTS
  [ "$status" -eq 0 ]
  ports=$(awk '{print $2}' <<<"$output" | sort -u)
  [[ $ports =~ ^(1[0-9]{4})-(1[0-9]{4})$ ]]
  [ $((BASH_REMATCH[2] - BASH_REMATCH[1])) -eq 2 ]
  run --separate-stderr task_env -N3 --resv-ports -- SLURM_STEP_RESV_PORTS
  [ "$status" -eq 0 ]
  [ "$(awk '{print $2}' <<<"$output" | sort -u)" = "<unset>" ]
}

@test "cluster.sh run does not pass the caller's Slurm job or PyTorch variables on" {
  run --separate-stderr env SLURM_JOB_ID=4242 SLURM_NTASKS=99 RANK=7 MASTER_ADDR=192.0.2.1 \
    "$CLUSTER" run srun -N1 bash -c 'echo ${RANK:-unset} ${MASTER_ADDR:-unset} $SLURM_NTASKS'
  [ "$status" -eq 0 ]
  [ "$output" = "unset unset 1" ]
}

@test "Debian's python3 imports torch on a compute node" {
  run --separate-stderr cl_srun -N1 -w node02 /usr/bin/python3 -c \
    'import socket, torch, torch.distributed as d; print(socket.gethostname(), d.is_gloo_available())'
  [ "$status" -eq 0 ]
  [ "$output" = "node02 True" ]
}

@test "gloo all-reduce across 3 nodes, rendezvous at an address and port derived from Slurm" {
  # MASTER_ADDR: the step's first node, resolved; MASTER_PORT: its first reserved port.
  run --separate-stderr cl_srun -N3 -n3 --resv-ports=1 bash -c '
    head=$(scontrol show hostnames "$SLURM_STEP_NODELIST" | head -n1)
    export MASTER_ADDR=$(getent ahostsv4 "$head" | awk "NR==1{print \$1}")
    export MASTER_PORT=${SLURM_STEP_RESV_PORTS%%[-,]*}
    export RANK=$SLURM_PROCID WORLD_SIZE=$SLURM_NTASKS
    exec /usr/bin/python3 -c "
import os, socket, torch, torch.distributed as d
d.init_process_group(\"gloo\", init_method=\"env://\")
t = torch.tensor([float(d.get_rank() + 1)])
d.all_reduce(t)
print(d.get_rank(), d.get_world_size(), socket.gethostname(), os.environ[\"MASTER_ADDR\"], int(t.item()))
d.destroy_process_group()"'
  [ "$status" -eq 0 ]
  diff <(printf '%s\n' "0 3 node01 $SUBNET.11 6" "1 3 node02 $SUBNET.11 6" "2 3 node03 $SUBNET.11 6") \
    <(sort -n <<<"$output")
}

@test "an sbatch job runs its batch script on node01 and its steps on all nodes" {
  dir=$(mktemp -d /tmp/ddp-smoke.XXXXXX)
  cat >"$dir/job.sh" <<EOF
#!/bin/bash
#SBATCH -N3 --ntasks-per-node=2 --output=$dir/out
echo "batch \$(hostname) \$SLURM_JOB_NODELIST \$SLURM_NTASKS"
srun bash -c 'echo "task \$SLURM_PROCID \$(hostname)"' | sort -n -k2
EOF
  jobid=$(cl sbatch --parsable "$dir/job.sh")
  wait_job "$jobid" 120
  diff <(printf '%s\n' "batch node01 node[01-03] 6" "task 0 node01" "task 1 node01" \
                       "task 2 node02" "task 3 node02" "task 4 node03" "task 5 node03") "$dir/out"
  rm -rf "$dir"
}

@test "two jobs share the same three nodes at the same time" {
  dir=$(mktemp -d /tmp/ddp-smoke.XXXXXX)
  # Each job waits, bounded, until the other has started too.
  for j in a b; do
    other=$([ $j = a ] && echo b || echo a)
    cl sbatch --parsable -N3 --output="$dir/$j.out" --wrap \
      "touch $dir/$j.started; for i in \$(seq 100); do [ -e $dir/$other.started ] && break; sleep 0.2; done
       [ -e $dir/$other.started ] && echo together \$SLURM_JOB_NODELIST" >"$dir/$j.id"
  done
  wait_job "$(cat "$dir/a.id")" 60
  wait_job "$(cat "$dir/b.id")" 60
  [ "$(cat "$dir/a.out" "$dir/b.out")" = $'together node[01-03]\ntogether node[01-03]' ]
  rm -rf "$dir"
}

@test "concurrent steps of one job run side by side with --exact" {
  run_again_after_slurmd_crash --separate-stderr cl salloc -N3 bash -c '
    start=$(date +%s)
    for i in 1 2 3; do srun -N3 --ntasks-per-node=1 --exact sleep 3 & done; wait
    echo elapsed $(( $(date +%s) - start ))'
  [ "$status" -eq 0 ]
  elapsed=$(awk '/^elapsed/{print $2}' <<<"$output")
  [ "$elapsed" -lt 9 ]   # one after the other would take at least 9 s
}
