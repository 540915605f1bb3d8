#!/usr/bin/env bats
# The plugin, ddp-check and a gloo all-reduce on 16 nodes (cluster.sh up --nodes 16): what the
# 3-node suites check, at a size where node lists need Slurm's compressed notation and the
# kernel's neighbour table its raised limits. The large sizes (64 to 256 nodes) are measured by
# tests/bench/bench_scale.sh, not here.
#
# This file brings its own cluster up and down: it runs on cluster DDP_CLUSTER_ID when that is
# 1-9, else on cluster 7; never on cluster 0, the fixture's 3-node cluster. Needs root, Slurm,
# the plugin ($DDP_PLUGIN, else build/spank/spank_ddp.so), ddp-check ($DDP_CHECK_BIN, else
# build/contrib/ddp-check/ddp-check) and, for the all-reduce, Debian's python3-torch; missing
# ones skip, visibly.

bats_require_minimum_version 1.5.0

if [[ ! ${DDP_CLUSTER_ID:-} =~ ^[1-9]$ ]]; then
  export DDP_CLUSTER_ID=7
  unset DDP_CLUSTER_DIR   # it would name cluster 0's state
fi
load lib

k_nodes=16

setup_file() {
  SCALE_WORK=$(mktemp -d /tmp/ddp-scale.XXXXXX)
  export SCALE_WORK
}

teardown_file() {
  "$CLUSTER" down >/dev/null 2>&1 || true
  rm -rf "${SCALE_WORK:?}"
}

setup() {
  local why status plugin=${DDP_PLUGIN:-$REPO/build/spank/spank_ddp.so}
  why=$("$CLUSTER" check 2>&1) || skip "cluster prerequisite missing: $why"
  [[ -f $plugin ]] || skip "plugin not built ($plugin); set DDP_PLUGIN"
  if ! status=$("$CLUSTER" status 2>/dev/null) || ! grep -q "^nodes: .* ($k_nodes)$" <<<"$status"; then
    "$CLUSTER" up --nodes "$k_nodes" --plugin "$plugin" >"$SCALE_WORK/up.log" 2>&1 ||
      { cat "$SCALE_WORK/up.log" >&2; return 1; }
  fi
  "$CLUSTER" set-plugstack ""
  if [[ -z ${DDP_CHECK_BIN:-} && -x $REPO/build/contrib/ddp-check/ddp-check ]]; then
    DDP_CHECK_BIN=$REPO/build/contrib/ddp-check/ddp-check
  fi
}

need_check() {
  [[ -x ${DDP_CHECK_BIN:-} ]] ||
    skip "ddp-check not found: set DDP_CHECK_BIN=BUILD/contrib/ddp-check/ddp-check (ctest sets it)"
}

@test "16 nodes: one NodeName line, idle in sinfo, and the neighbour limits hold (N+1)^2 entries" {
  grep -qx "NodeName=node\[01-16\] NodeAddr=$SUBNET.\[11-26\] CPUs=8 State=UNKNOWN" \
    "$DDP_CLUSTER_DIR/etc/slurm.conf"
  run --separate-stderr cl sinfo -h -N -o '%N %T'
  [ "$status" -eq 0 ]
  [ "$(grep -c ' idle$' <<<"$output")" -eq "$k_nodes" ]
  [ "$(sysctl -n net.ipv4.neigh.default.gc_thresh1)" -ge $(((k_nodes + 1) ** 2)) ]
  [ "$(sysctl -n net.ipv4.neigh.default.gc_thresh3)" -ge $((2 * (k_nodes + 1) ** 2)) ]
}

@test "srun -N16 --ntasks-per-node=2 --ddp: every task's rank, node rank and master" {
  run --separate-stderr task_env -N"$k_nodes" --ntasks-per-node=2 --ddp -- \
    hostname RANK LOCAL_RANK WORLD_SIZE NODE_RANK NNODES MASTER_ADDR MASTER_PORT
  [ "$status" -eq 0 ]
  port=$(awk '{print $9}' <<<"$output" | sort -u)
  [[ $port =~ ^[0-9]+$ ]]
  diff <(for ((t = 0; t < 2 * k_nodes; t++)); do
           printf '%d node%02d %d %d %d %d %d %s %s\n' $t $((t / 2 + 1)) $t $((t % 2)) \
             $((2 * k_nodes)) $((t / 2)) "$k_nodes" "$SUBNET.11" "$port"
         done) <(echo "$output")
}

@test "ddp-check on 16 nodes x 2 ranks: OK, and its table has one row per node" {
  need_check
  run --separate-stderr cl srun -N"$k_nodes" --ntasks-per-node=2 --ddp "$DDP_CHECK_BIN"
  echo "$output"
  [ "$status" -eq 0 ]
  grep -qE "^ddp-check: OK: 32 ranks on 16 nodes reached $SUBNET\.11:[0-9]+ in [0-9.]+ s$" <<<"$output"
  rows=$(grep -E '^[0-9]+ +node[0-9]+ ' <<<"$output")
  diff <(for ((n = 0; n < k_nodes; n++)); do
           printf '%d node%02d %d,%d %s\n' $n $((n + 1)) $((2 * n)) $((2 * n + 1)) "$SUBNET.$((11 + n))"
         done) <(awk '{print $1, $2, $3, $NF}' <<<"$rows")
}

@test "ddp-check on 16 nodes: a fault that names every host names them as node[01-16]" {
  need_check
  # Every rank claims NODE_RANK 0: rank 0 names the hosts that claim it, in one short line.
  run cl srun -N"$k_nodes" --ntasks-per-node=1 --ddp bash -c \
    "export NODE_RANK=0 GROUP_RANK=0; exec $DDP_CHECK_BIN --timeout 10"
  echo "$output"
  [ "$status" -eq 1 ]
  grep -qE '^ddp-check: FAULT: NODE_RANK 0 claimed by hosts node\[01-16\]$' <<<"$output"
  grep -qE '^0 +node\[01-16\] +0-15 ' <<<"$output"   # the table's one row for node 0
  [ "$(awk '{ if (length($0) > m) m = length($0) } END { print m }' <<<"$output")" -lt 300 ]
}

@test "ddp-check --pairs on 16 nodes, 2 of 15 rounds: every node meets 2 others, none is slow" {
  need_check
  run --separate-stderr cl srun -N"$k_nodes" --ntasks-per-node=1 --ddp "$DDP_CHECK_BIN" \
    --timeout 20 --pairs --pairs-rounds 2 --pairs-seconds 0.2 --pairs-threshold 0.1 --no-nccl
  echo "$output"
  [ "$status" -eq 0 ]
  grep -qx "pairs: 16 nodes, 2 of 15 rounds (each node meets 2 others), 0.20 s per direction; NCCL send/recv skipped: --no-nccl" <<<"$output"
  grep -qx "pairs: round 2 of 2 done" <<<"$output"
  # The matrix: 16 rows, each with two measured pairs and 13 unmeasured ones besides itself.
  rows=$(sed -n '/^pairs: bandwidth in Gbit\/s/,/^pairs: round trip/p' <<<"$output" | grep -E '^ +[0-9]+ node[0-9]+ ')
  [ "$(wc -l <<<"$rows")" -eq "$k_nodes" ]
  [ "$(awk '{ n = 0; for (i = 3; i <= 18; i++) if ($i ~ /^[0-9.]+$/) n++; print n }' <<<"$rows" | sort -u)" = 2 ]
  ! grep -q "SLOW\|not measured\|suspect" <<<"$output"
  grep -qx "ddp-check: pairs: OK" <<<"$output"
}

@test "gloo all-reduce on 16 nodes x 1 rank under --ddp" {
  need_torch
  CL_TIMEOUT=240   # 16 imports of torch on this machine's few cores
  run --separate-stderr cl srun -N"$k_nodes" --ntasks-per-node=1 --ddp \
    /usr/bin/python3 "$REPO/contrib/examples/allreduce.py"
  echo "$output"
  [ "$status" -eq 0 ]
  # sum of ranks 0..15 = 120, on every rank; each rank on its own node, master node01.
  got=$(sed -nE "s/^rank=([0-9]+) world=16 local_rank=0 host=(node[0-9]+) master=$SUBNET\.11:[0-9]+ allreduce_sum=120 expected=120$/\1 \2/p" <<<"$output" | sort -n)
  diff <(for ((r = 0; r < k_nodes; r++)); do printf '%d node%02d\n' $r $((r + 1)); done) <(echo "$got")
}
