#!/usr/bin/env bats
# ddp-check under `srun --ddp` on the real cluster: a healthy step passes with the table it
# should print, and each injected fault (unreachable MASTER_ADDR, duplicated RANK, missing rank)
# is named within the bound. Also the plugin's derived tuning variables: socket_ifname=auto
# (NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME) and OMP_NUM_THREADS.
# Nodes without IPv6 (sysctl, and a stand-in for a kernel without it): the rendezvous and
# --pairs work over IPv4 alone.
#
# DDP_CHECK_BIN names the ddp-check to run (ctest sets it to the build's binary); the nodes
# share this machine's file system, so the build tree's path works on every node.

load lib

# Bound given to ddp-check in the fault tests, and what srun may add to start and end a step.
BOUND=5
SLACK=4

# The table ddp-check prints for 6 ranks on 3 nodes, 2 per node, over eth0.
table_3x2() {
  cat <<EOT
NODE  HOST    RANKS  LOCAL RANKS  GPUS  INTERFACE        ADDRESS
0     node01  0,1    0,1          -     eth0 (ethernet)  $SUBNET.11
1     node02  2,3    0,1          -     eth0 (ethernet)  $SUBNET.12
2     node03  4,5    0,1          -     eth0 (ethernet)  $SUBNET.13
EOT
}

setup() {
  skip_unless_cluster
  "$CLUSTER" set-plugstack ""
  if [[ -z ${DDP_CHECK_BIN:-} ]]; then
    if [[ -x $REPO/build/contrib/ddp-check/ddp-check ]]; then
      DDP_CHECK_BIN=$REPO/build/contrib/ddp-check/ddp-check
    else
      DDP_CHECK_BIN=$(command -v ddp-check || true)
    fi
  fi
  [[ -x ${DDP_CHECK_BIN:-} ]] ||
    skip "ddp-check not found: set DDP_CHECK_BIN=BUILD/contrib/ddp-check/ddp-check (ctest sets it)"
}

# Sets DDPGEN and checks torch, or skips naming what is missing.
need_ddpgen_torch() {
  need_ddpgen
  need_torch
}

# preflight_job PROFILE [PRELUDE]: renders a 3 x 2 srun job with `preflight: true` running
# contrib/examples/allreduce.py into $work/job.slurm, and puts `ddp-check` (the script calls it
# by name) in $work/bin: the real one, or with PRELUDE run first in each task to break the
# world. PROFILE "noplugin" is the local profile with ddp_plugin: false (the script computes
# the environment itself, as on a site without the plugin).
preflight_job() {
  local profile=$1 prelude=${2:-}
  work=$(mktemp -d /tmp/ddp-preflight.XXXXXX)
  if [[ $profile == noplugin ]]; then
    printf 'extends: %s\nddp_plugin: false\n' "$REPO/site-profiles/local.yaml" >"$work/noplugin.yaml"
    profile=$work/noplugin.yaml
  fi
  mkdir "$work/bin"
  printf '#!/bin/bash\n%s\nexec %q "$@"\n' "$prelude" "$DDP_CHECK_BIN" >"$work/bin/ddp-check"
  chmod +x "$work/bin/ddp-check"
  cat >"$work/job.yaml" <<EOF
name: preflight
nodes: 3
procs_per_node: 2
time: "00:05:00"
launcher: srun
script: $REPO/contrib/examples/allreduce.py
output: $work/out
preflight: true
EOF
  "$DDPGEN" --profile "$profile" "$work/job.yaml" -o "$work/job.slurm"
}

# Runs `srun SRUN_ARGS... bash -c "PRELUDE exec ddp-check --timeout $BOUND"` and records its
# output, status and wall time in $output, $status and $elapsed (seconds, fractional).
check_step() {
  local prelude=$1
  shift
  local t0
  t0=$(date +%s.%N)
  run cl srun "$@" bash -c "$prelude exec $DDP_CHECK_BIN --timeout $BOUND"
  elapsed=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')
  echo "# exit $status after ${elapsed}s (bound ${BOUND}s + ${SLACK}s)"
}

within_bound() {
  awk -v e="$elapsed" -v b="$BOUND" -v s="$SLACK" 'BEGIN { exit !(e < b + s) }'
}

@test "healthy 3 nodes x 2 tasks: ddp-check passes and its table shows 6 ranks on 3 nodes" {
  run cl srun -N3 --ntasks-per-node=2 --ddp "$DDP_CHECK_BIN"
  echo "$output"
  [ "$status" -eq 0 ]
  port=$(grep -o "reached $SUBNET.11:[0-9]*" <<<"$output" | cut -d: -f2)
  [ -n "$port" ]
  diff <(table_3x2) <(grep -E '^(NODE|[0-9]+ +node)' <<<"$output")
  [[ "$output" == *'socket_ifname=auto sets NCCL_SOCKET_IFNAME==eth0 GLOO_SOCKET_IFNAME=eth0'* ]]
  [[ "$output" == *"NCCL phase skipped: "* ]]   # no GPU here: skipped visibly, not failed
  grep -qE "^ddp-check: OK: 6 ranks on 3 nodes reached $SUBNET\.11:$port in [0-9.]+ s$" <<<"$output"
  [[ "$output" != *FAIL* ]]
}

@test "--ddp=torchrun: ddp-check sees 3 node launchers with NPROC_PER_NODE workers each" {
  run cl env DDP_NPROC_PER_NODE=2 srun -N3 --ntasks-per-node=1 --ddp=torchrun "$DDP_CHECK_BIN"
  echo "$output"
  [ "$status" -eq 0 ]
  diff <(table_3x2) <(grep -E '^(NODE|[0-9]+ +node)' <<<"$output")
  [[ "$output" == *"NCCL phase skipped: torchrun mode (a launcher is not a rank)"* ]]
  grep -qE "^ddp-check: OK: 3 node launchers on 3 nodes reached $SUBNET\.11:[0-9]+ in " <<<"$output"
}

@test "unreachable MASTER_ADDR: every rank names the address and port, within the bound" {
  # $SUBNET.99 is on the nodes' network but held by no host: connect() fails with no reply.
  check_step "MASTER_ADDR=$SUBNET.99" -N3 --ntasks-per-node=2 --ddp
  echo "$output"
  [ "$status" -eq 1 ]
  within_bound
  [[ "$output" == *"ddp-check: FAULT: rank 0 (node01) cannot reach itself at $SUBNET.99:"* ]]
  [[ "$output" == *"ddp-check: FAULT: missing RANK 0-5 (WORLD_SIZE=6, 0 distinct arrived): nodes 0-2 sent no rank at all"* ]]
  for r in 1:node01 2:node02 3:node02 4:node03 5:node03; do
    grep -qE "^ddp-check: rank ${r%%:*} \(${r#*:}\): FAILED: cannot reach the master at $SUBNET\.99:[0-9]+ \(MASTER_ADDR:MASTER_PORT\) within [0-9.]+ s" <<<"$output"
  done
}

@test "duplicated RANK: rank 0 names the duplicate, its hosts, and the rank it displaced" {
  check_step '[ "$RANK" = 3 ] && export RANK=1;' -N3 --ntasks-per-node=2 --ddp
  echo "$output"
  [ "$status" -eq 1 ]
  within_bound
  grep -qE '^ddp-check: FAULT: duplicate RANK 1 from node01 \(pid [0-9]+\), node02 \(pid [0-9]+\)$' <<<"$output"
  grep -qx 'ddp-check: FAULT: missing RANK 3 (WORLD_SIZE=6, 5 distinct arrived)' <<<"$output"
  grep -qx 'ddp-check: FAILED: 2 faults found by rank 0 (node01)' <<<"$output"
  # Every other process gets the verdict and says so.
  [ "$(grep -c 'FAILED (verdict of rank 0): duplicate RANK 1 from node01' <<<"$output")" -eq 5 ]
}

@test "missing rank: rank 0 names the rank, its node and its local rank, within the bound" {
  check_step '[ "$RANK" = 4 ] && exit 0;' -N3 --ntasks-per-node=2 --ddp
  echo "$output"
  [ "$status" -eq 1 ]
  within_bound
  grep -qx 'ddp-check: FAULT: missing RANK 4 (WORLD_SIZE=6, 5 distinct arrived): node 2 (node03) lacks LOCAL_RANK 0 of LOCAL_WORLD_SIZE=2 (RANK 4)' <<<"$output"
  [ "$(grep -c 'FAILED (verdict of rank 0): missing RANK 4' <<<"$output")" -eq 4 ]
  grep -qE "^2 +node03 +5 +1 " <<<"$output"   # the table shows what node03 did send
}

@test "socket_ifname=auto: NCCL_SOCKET_IFNAME is =eth0 and GLOO_SOCKET_IFNAME eth0 in every task" {
  "$CLUSTER" set-plugstack "socket_ifname=auto"
  run task_env -N3 --ntasks-per-node=2 --ddp -- hostname NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME
  auto_status=$status auto_output=$output
  run cl env NCCL_SOCKET_IFNAME==ib0 srun -N2 --ddp bash -c 'echo $NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME'
  user_status=$status user_output=$output
  "$CLUSTER" set-plugstack "socket_ifname=auto addr=hostname"
  run task_env -N2 --ddp -- MASTER_ADDR NCCL_SOCKET_IFNAME
  name_status=$status name_output=$output
  "$CLUSTER" set-plugstack ""
  run task_env -N2 --ddp -- NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME
  [ "$auto_status" -eq 0 ]
  # Every task, on the node Slurm gave it (task 0 on node03 on a Slurm 26.05 topology site).
  diff <(slurm_layout -N3 --ntasks-per-node=2 | awk '{print $3, $1, "=eth0", "eth0"}' | sort -n) \
       <(echo "$auto_output")
  [ "$user_status" -eq 0 ]
  [ "$user_output" = $'=ib0 eth0\n=ib0 eth0' ]   # the user's value wins; the other is derived
  [ "$name_status" -eq 0 ]
  [ "$name_output" = $'0 node01 =eth0\n1 node01 =eth0' ]
  [ "$status" -eq 0 ]
  [ "$output" = $'0 <unset> <unset>\n1 <unset> <unset>' ]   # off unless the site asks
}

@test "OMP_NUM_THREADS: srun -c, the node's CPUs shared by its tasks, the user's value" {
  run task_env -N1 -n2 -c2 --ddp -- OMP_NUM_THREADS
  [ "$status" -eq 0 ]
  [ "$output" = $'0 2\n1 2' ]
  run cl env OMP_NUM_THREADS=7 srun -N1 -n1 --ddp bash -c 'echo $OMP_NUM_THREADS'
  [ "$status" -eq 0 ]
  [ "$output" = 7 ]
  # Without -c: the CPUs the step can use on the node (the smaller of its affinity mask and
  # SLURM_CPUS_ON_NODE), divided among the node's 2 tasks, at least 1.
  run cl srun -N3 --ntasks-per-node=2 --ddp bash -c \
    'echo $OMP_NUM_THREADS $SLURM_CPUS_ON_NODE $(env -u OMP_NUM_THREADS nproc)'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 6 ]
  awk '{ pool = $2 < $3 ? $2 : $3; want = int(pool / 2); if (want < 1) want = 1
         if ($1 != want) { print "OMP_NUM_THREADS=" $1 ", expected " want; exit 1 } }' <<<"$output"
  "$CLUSTER" set-plugstack "omp_num_threads=no"
  run cl srun -N1 -n1 --ddp bash -c 'echo ${OMP_NUM_THREADS:-unset}'
  "$CLUSTER" set-plugstack ""
  [ "$status" -eq 0 ]
  [ "$output" = unset ]
}

@test "ddpgen preflight: ddp-check runs as the job's first step, then training" {
  covered_for_the_installed_files_by "\"ddpgen preflight: a broken world fails the job\" (the installed ddpgen's preflight with the installed ddp-check)"
  slurm_side_covered_by "\"ddpgen preflight: a broken world fails the job\" and heal.bats' \"a node that cannot reach the head\" (a preflight step, then training)"
  need_ddpgen_torch
  preflight_job local
  grep -q '^srun --ddp --ntasks-per-node=2 \\$' "$work/job.slurm"
  jobid=$(cl env PATH="$work/bin:/usr/sbin:/usr/bin:/sbin:/bin" sbatch --parsable "$work/job.slurm")
  wait_job "$jobid" 120
  cat "$work/out"
  grep -qE "^ddp-check: OK: 6 ranks on 3 nodes reached $SUBNET\.11:[0-9]+ in " "$work/out"
  [ "$(allreduce_ranks 6 <"$work/out")" = "0 1 2 3 4 5" ]
  # The check's verdict comes before the first line of training.
  ok_line=$(grep -n '^ddp-check: OK' "$work/out" | cut -d: -f1)
  train_line=$(grep -n 'allreduce_sum=' "$work/out" | head -1 | cut -d: -f1)
  [ "$ok_line" -lt "$train_line" ]
  rm -rf "$work"
}

@test "ddpgen preflight: a broken world fails the job within the bound, before training" {
  need_ddpgen_torch
  preflight_job local '[ "$RANK" = 3 ] && export RANK=1'
  t0=$(date +%s.%N)
  jobid=$(cl env PATH="$work/bin:/usr/sbin:/usr/bin:/sbin:/bin" DDP_CHECK_TIMEOUT=$BOUND sbatch --parsable "$work/job.slurm")
  state=$(wait_job_end "$jobid" 120)
  elapsed=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')
  cat "$work/out"
  echo "# job $jobid ended $state after ${elapsed}s"
  [ "$state" = FAILED ]
  within_bound
  grep -qE '^ddp-check: FAULT: duplicate RANK 1 from node01 \(pid [0-9]+\), node02 \(pid [0-9]+\)$' "$work/out"
  grep -qx 'ddpgen: preflight: ddp-check found a fault in this allocation (above); training not started' "$work/out"
  run grep -c 'allreduce_sum=' "$work/out"
  [ "$output" = 0 ]
  rm -rf "$work"
}

@test "ddpgen preflight without the plugin: ddp-check reads the environment the script computes" {
  covered_for_the_installed_files_by "\"ddpgen preflight: a broken world fails the job\" (the installed ddpgen's preflight with the installed ddp-check)"
  need_ddpgen_torch
  preflight_job noplugin
  grep -q '^srun --ntasks-per-node=2 \\$' "$work/job.slurm"
  [ "$(grep -c '^srun .*--ddp' "$work/job.slurm")" -eq 0 ]
  jobid=$(cl env PATH="$work/bin:/usr/sbin:/usr/bin:/sbin:/bin" sbatch --parsable "$work/job.slurm")
  wait_job "$jobid" 120
  cat "$work/out"
  expected="NODE  HOST    RANKS  LOCAL RANKS  GPUS  INTERFACE        ADDRESS
0     node01  0,1    0,1          -     eth0 (ethernet)  $SUBNET.11
1     node02  2,3    0,1          -     eth0 (ethernet)  $SUBNET.12
2     node03  4,5    0,1          -     eth0 (ethernet)  $SUBNET.13"
  diff <(echo "$expected") <(grep -E '^(NODE|[0-9]+ +node)' "$work/out")
  grep -qE '^ddp-check: OK: 6 ranks on 3 nodes reached node01:[0-9]+ in ' "$work/out"
  [ "$(allreduce_ranks 6 'node01:[0-9]+' <"$work/out")" = "0 1 2 3 4 5" ]
  rm -rf "$work"
}

# ipv6_off_on_nodes 1|0: turns IPv6 off (1) or on again (0) on every interface of the nodes.
ipv6_off_on_nodes() {
  local node
  for node in node01 node02 node03; do
    ip netns exec "$(netns "$node")" sysctl -qw net.ipv6.conf.all.disable_ipv6="$1" \
      net.ipv6.conf.default.disable_ipv6="$1" net.ipv6.conf.lo.disable_ipv6="$1"
  done
}

@test "nodes without IPv6: the rendezvous and --pairs listen and connect over IPv4 alone" {
  [[ -f ${DDP_NO_IPV6:-} ]] ||
    skip "DDP_NO_IPV6 is not set: ctest sets it to the build's libddp_no_ipv6.so"
  # The stand-in for a kernel without IPv6 refuses IPv6 sockets as such a kernel does.
  if command -v python3 >/dev/null; then
    run env LD_PRELOAD="$DDP_NO_IPV6" python3 -c 'import socket; socket.socket(socket.AF_INET6)'
    [ "$status" -ne 0 ]
    [[ $output == *"Address family not supported by protocol"* ]]
  fi
  ipv6_off_on_nodes 1
  run cl srun -N3 --ntasks-per-node=2 --ddp env LD_PRELOAD="$DDP_NO_IPV6" "$DDP_CHECK_BIN" \
    --timeout 10 --pairs --pairs-seconds 0.2 --pairs-threshold 0.01
  ipv6_off_on_nodes 0
  echo "$output"
  [ "$status" -eq 0 ]
  grep -qE '^ddp-check: OK: 6 ranks on 3 nodes reached ' <<<"$output"
  grep -qx 'pairs: round 3 of 3 done' <<<"$output"
  # Every pair measured: three figures in each node's row of the bandwidth table.
  [ "$(grep -cE '^ +[0-2] node0[1-3]( +([0-9]+\.[0-9]+|-)){3} +[0-9]+\.[0-9]+$' <<<"$output")" -ge 3 ]
  [ "$(grep -c 'cannot listen\|not measured\|did not join' <<<"$output")" -eq 0 ]
  grep -qx 'ddp-check: pairs: OK' <<<"$output"
}
