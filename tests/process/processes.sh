#!/usr/bin/env bash
# ddp-check with real processes on 127.0.0.1, no Slurm: each scenario starts the ranks with
# the environment `srun --ddp` would give them (DDP_CHECK_HOSTNAME fakes the nodes) and checks
# exit codes, the exact diagnosis and that every process ended within the bound.
# Usage: processes.sh PATH/TO/ddp-check SCENARIO   (scenarios: see the case below)
set -uo pipefail

bin=$1
scenario=$2
timeout=3      # --timeout given to every process
slack=1.5      # seconds allowed past the timeout for process start and exit

work=$(mktemp -d)
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$work"' EXIT
pids=()
names=()
declare -A rc

# A port nobody listens on, outside the kernel's ephemeral range (where connect() picks
# local ports) so that a concurrent test cannot take it by accident.
free_port() {
  local low high port used
  read -r low high </proc/sys/net/ipv4/ip_local_port_range
  used=$(awk 'NR > 1 { split($2, a, ":"); print strtonum("0x" a[2]) }' /proc/net/tcp /proc/net/tcp6 2>/dev/null | sort -u)
  for _ in $(seq 200); do
    port=$((10000 + RANDOM % 20000))
    ((port >= low && port <= high)) && continue
    grep -qx "$port" <<<"$used" || { echo "$port"; return; }
  done
  echo "no free port found" >&2
  exit 1
}
port=$(free_port)

nccl_flag=--no-nccl

# start NAME VAR=VALUE... : one ddp-check process with exactly this environment.
start() {
  local name=$1
  shift
  env -i PATH="$PATH" MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" "$@" \
    "$bin" --timeout "$timeout" $nccl_flag >"$work/$name.out" 2>&1 &
  pids+=($!)
  names+=("$name")
}

# rank R LOCAL_RANK NODE_RANK HOST WORLD_SIZE LOCAL_WORLD_SIZE NNODES [VAR=VALUE...]
rank() {
  local r=$1 l=$2 n=$3 host=$4 world=$5 lws=$6 nnodes=$7
  shift 7
  start "rank$r-$host-$l" RANK="$r" LOCAL_RANK="$l" NODE_RANK="$n" DDP_CHECK_HOSTNAME="$host" \
    WORLD_SIZE="$world" LOCAL_WORLD_SIZE="$lws" NNODES="$nnodes" "$@"
}

failures=0
check() {
  if ! "$@"; then
    failures=$((failures + 1))
  fi
}

finish() {
  local i
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"
    rc[${names[$i]}]=$?
  done
  pids=()
  elapsed=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')
  for name in "${names[@]}"; do
    echo "---- $name (exit ${rc[$name]})"
    cat "$work/$name.out"
  done
  echo "---- all processes ended after ${elapsed}s (bound ${timeout}s + ${slack}s)"
  check awk -v e="$elapsed" -v b="$((timeout))" -v s="$slack" 'BEGIN { exit !(e <= b + s) }' ||
    echo "FAIL: took ${elapsed}s, over the bound"
}

expect_rc() {
  if [[ "${rc[$1]}" != "$2" ]]; then
    echo "FAIL: $1 exited ${rc[$1]}, expected $2"
    failures=$((failures + 1))
  fi
}

expect_all_rc() {
  local name
  for name in "${names[@]}"; do expect_rc "$name" "$1"; done
}

expect_out() {
  if ! grep -qF -- "$2" "$work/$1.out"; then
    echo "FAIL: $1 did not print: $2"
    failures=$((failures + 1))
  fi
}

t0=$(date +%s.%N)
case "$scenario" in
  healthy)  # 2 nodes x 3 ranks, one GPU each
    for r in 0 1 2 3 4 5; do
      rank $r $((r % 3)) $((r / 3)) "node$((r / 3))" 6 3 2 CUDA_VISIBLE_DEVICES=$((r % 3))
    done
    finish
    expect_all_rc 0
    expect_out rank0-node0-0 "NODE  HOST   RANKS  LOCAL RANKS  GPUS   INTERFACE      ADDRESS"
    expect_out rank0-node0-0 "0     node0  0-2    0-2          0,1,2  lo (loopback)  127.0.0.1"
    expect_out rank0-node0-0 "1     node1  3-5    0-2          0,1,2  lo (loopback)  127.0.0.1"
    expect_out rank0-node0-0 "NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME for \`auto\`: =lo"
    expect_out rank0-node0-0 "ddp-check: OK: 6 ranks on 2 nodes reached 127.0.0.1:$port"
    ;;
  torchrun)  # --ddp=torchrun: 3 node launchers, 4 workers each
    for n in 0 1 2; do
      start "node$n" NODE_RANK=$n NNODES=3 NPROC_PER_NODE=4 WORLD_SIZE=12 \
        DDP_CHECK_HOSTNAME="gpu$n" SLURM_GPUS_ON_NODE=4
    done
    finish
    expect_all_rc 0
    expect_out node0 "2     gpu2  8-11   0-3          n=4   lo (loopback)  127.0.0.1"
    expect_out node0 "ddp-check: OK: 3 node launchers on 3 nodes"
    ;;
  unreachable)  # rank 0 never starts: every other rank names the address it could not reach
    rank 1 1 0 node0 4 2 2
    rank 2 0 1 node1 4 2 2
    finish
    expect_all_rc 1
    expect_out rank1-node0-1 "ddp-check: rank 1 (node0): FAILED: cannot reach the master at 127.0.0.1:$port (MASTER_ADDR:MASTER_PORT) within"
    expect_out rank2-node1-0 "cannot reach the master at 127.0.0.1:$port"
    expect_out rank2-node1-0 "Connection refused"
    ;;
  duplicate)  # RANK 1 twice, from two hosts; RANK 2 therefore missing
    rank 0 0 0 node0 4 2 2
    rank 1 1 0 node0 4 2 2
    rank 1 0 1 node1 4 2 2
    rank 3 1 1 node1 4 2 2
    finish
    expect_all_rc 1
    expect_out rank0-node0-0 "ddp-check: FAULT: duplicate RANK 1 from node0 (pid "
    expect_out rank0-node0-0 "), node1 (pid "
    expect_out rank0-node0-0 "ddp-check: FAULT: missing RANK 2 (WORLD_SIZE=4, 3 distinct arrived)"
    expect_out rank3-node1-1 "ddp-check: rank 3 (node1): FAILED (verdict of rank 0): duplicate RANK 1 from node0"
    ;;
  missing)  # WORLD_SIZE=4, RANK 2 never starts: named with its node and local rank
    rank 0 0 0 node0 4 2 2
    rank 1 1 0 node0 4 2 2
    rank 3 1 1 node1 4 2 2
    finish
    expect_all_rc 1
    expect_out rank0-node0-0 "ddp-check: FAULT: missing RANK 2 (WORLD_SIZE=4, 3 distinct arrived): node 1 (node1) lacks LOCAL_RANK 0 of LOCAL_WORLD_SIZE=2 (RANK 2)"
    expect_out rank1-node0-1 "FAILED (verdict of rank 0): missing RANK 2"
    expect_out rank3-node1-1 "FAILED (verdict of rank 0): missing RANK 2"
    ;;
  missing-node)  # a whole node never starts
    rank 0 0 0 node0 4 2 2
    rank 1 1 0 node0 4 2 2
    finish
    expect_all_rc 1
    expect_out rank0-node0-0 "ddp-check: FAULT: missing RANK 2,3 (WORLD_SIZE=4, 2 distinct arrived): node 1 sent no rank at all"
    ;;
  inconsistent)  # one rank believes WORLD_SIZE=6
    rank 0 0 0 node0 4 2 2
    rank 1 1 0 node0 4 2 2
    rank 2 0 1 node1 4 2 2
    rank 3 1 1 node1 6 2 2
    finish
    expect_all_rc 1
    expect_out rank0-node0-0 "ddp-check: FAULT: inconsistent WORLD_SIZE: ranks 0-2 (node0, node1) say 4, rank 3 (node1) says 6"
    expect_out rank2-node1-0 "FAILED (verdict of rank 0): inconsistent WORLD_SIZE"
    ;;
  garbage)  # a stray client sends junk and a 1 MB line: ignored, the healthy world passes
    rank 0 0 0 node0 2 1 2
    sleep 0.3
    { head -c 1000000 /dev/zero | tr '\0' 'x' >/dev/tcp/127.0.0.1/"$port"; } 2>/dev/null
    { printf 'GET / HTTP/1.0\r\n\r\n' >/dev/tcp/127.0.0.1/"$port"; } 2>/dev/null
    rank 1 0 1 node1 2 1 2
    finish
    expect_all_rc 0
    expect_out rank0-node0-0 "ddp-check: OK: 2 ranks on 2 nodes"
    ;;
  nccl-skip)  # NCCL wanted but no GPU visible: the phase is skipped visibly, the check passes
    nccl_flag=
    rank 0 0 0 node0 2 1 2 CUDA_VISIBLE_DEVICES=
    rank 1 0 1 node1 2 1 2 CUDA_VISIBLE_DEVICES=
    finish
    expect_all_rc 0
    expect_out rank0-node0-0 "NCCL phase skipped: "
    expect_out rank0-node0-0 "ddp-check: OK: 2 ranks on 2 nodes"
    ;;
  bad-env)  # no DDP environment at all: a usage error, not a hang
    start noenv
    finish
    expect_rc noenv 2
    expect_out noenv "ddp-check: error: neither RANK nor NODE_RANK and NNODES are set (run under \`srun --ddp\` or \`srun --ddp=torchrun\`)"
    ;;
  *)
    echo "unknown scenario $scenario" >&2
    exit 2
    ;;
esac

if ((failures > 0)); then
  echo "$scenario: $failures check(s) failed"
  exit 1
fi
echo "$scenario: passed"
