#!/usr/bin/env bats
# --ddp fails safe on a real Slurm, whatever plugstack.conf says: a refusal stops the step with
# the plugin listed `required` or `optional`, a fault on one node ends the step on every node,
# a plugstack.conf typo fails only --ddp steps, every node exports the same MASTER_ADDR whatever
# its resolver's order, Slurm's address stands in for a head name that does not resolve, and
# `srun -v` says what was chosen and why, and a resolver that never answers costs resolve_timeout=
# seconds, not the launch. Runs on the fixture's plain cluster (node01..node03).

load lib

setup() {
  skip_unless_cluster
  "$CLUSTER" set-plugstack ""
  "$CLUSTER" set-plugstack-kind required
}

teardown() {
  "$CLUSTER" set-plugstack-kind required >/dev/null 2>&1 || true
  "$CLUSTER" set-plugstack "" >/dev/null 2>&1 || true
  local node
  for node in node01 node02 node03; do "$CLUSTER" set-hosts "$node" >/dev/null 2>&1 || true; done
  if [[ -n ${holder_pid:-} ]]; then kill "$holder_pid" 2>/dev/null || true; fi
  "$CLUSTER" set-dns off >/dev/null 2>&1 || true
  if [[ -n ${extra_addresses:-} ]]; then drop_extra_addresses; fi
}

# Seconds since EPOCH_START ($EPOCHREALTIME), one decimal.
elapsed_since() {
  awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

@test "a refused step runs no task, with the plugin required or optional" {
  for kind in required optional; do
    "$CLUSTER" set-plugstack-kind "$kind"
    run "$CLUSTER" run srun -N2 --ntasks-per-node=2 --ddp=torchrun bash -c 'echo RAN'
    echo "# $kind: status $status" >&3
    [ "$status" -ne 0 ]
    [[ "$output" == *"--ddp=torchrun starts one torchrun launcher per node"* ]]
    [[ "$output" != *RAN* ]]
  done
}

@test "a fault on rank 0's node only ends the whole step on every node, without -K" {
  need_torch
  port=23456
  # Something else holds MASTER_PORT on node01 only; node02 and node03 see nothing wrong and
  # their ranks enter a real init_process_group, which would wait 30 minutes for rank 0.
  timeout 300 nsenter --net="/run/netns/$(netns node01)" /usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(); s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(); time.sleep(300)' \
    "$SUBNET.11" "$port" &
  holder_pid=$!
  await_bound node01 tcp "$port"
  for kind in required optional; do
    "$CLUSTER" set-plugstack-kind "$kind"
    start=$EPOCHREALTIME
    run "$CLUSTER" run env DDP_MASTER_PORT=$port srun -N3 --ntasks-per-node=1 --ddp \
      /usr/bin/python3 "$REPO/contrib/examples/allreduce.py"
    took=$(elapsed_since "$start")
    echo "# $kind: step ended after ${took}s, status $status" >&3
    [ "$status" -ne 0 ]
    [[ "$output" == *"node01"*"MASTER_PORT=$port is not free on the rank-0 node"* ]]
    [[ "$output" != *allreduce_sum* ]]
    # The other ranks are ended by the plugin's step cancellation, not by PyTorch's timeout
    # (30 min) nor by cl's (CL_TIMEOUT): a bound far below both.
    awk -v t="$took" 'BEGIN { exit !(t < 60) }'
  done
}

@test "a plugstack.conf typo fails only --ddp steps, naming the file and the key" {
  for kind in required optional; do
    "$CLUSTER" set-plugstack-kind "$kind"
    "$CLUSTER" set-plugstack "port_range=20000-30999 colour=blue"
    run "$CLUSTER" run srun -N2 bash -c 'echo RAN'
    [ "$status" -eq 0 ]
    [ "$output" = $'RAN\nRAN' ]
    run "$CLUSTER" run sbatch --parsable -N1 --output=/dev/null --wrap true
    [ "$status" -eq 0 ]
    wait_job "$output" 60
    run "$CLUSTER" run srun -N2 --ddp bash -c 'echo RAN'
    [ "$status" -ne 0 ]
    [[ "$output" == *"plugstack.conf"*'"colour"'* ]]
    [[ "$output" != *RAN* ]]
  done
}

# Adds two more addresses to node01's eth0, reachable from the other nodes through on-link
# routes, so that the head's name has several addresses, as with Ethernet and InfiniBand.
# await_bound NODE PROTO PORT: waits (up to 60 s) until a socket of PROTO (tcp, udp) is bound to
# PORT in NODE's network namespace; a python3 that binds it can take seconds to start on a
# loaded machine.
await_bound() {
  local flag=-Hltn
  [[ $2 == udp ]] && flag=-Hlun
  for _ in $(seq 600); do
    [[ -n $(nsenter --net="/run/netns/$(netns "$1")" ss "$flag" "sport = :$3") ]] && return 0
    sleep 0.1
  done
  echo "# nothing bound $2 port $3 on $1 in 60 s" >&3
  return 1
}

add_extra_addresses() {
  extra_addresses="172.30.$DDP_CLUSTER_ID.11/24 192.168.$DDP_CLUSTER_ID.11/24"
  local a node
  for a in $extra_addresses; do
    ip -n "$(netns node01)" addr add "$a" dev eth0
    for node in node02 node03; do
      ip -n "$(netns "$node")" route add "${a%.*}.0/24" dev eth0
    done
  done
}

drop_extra_addresses() {
  local a node
  for a in $extra_addresses; do
    ip -n "$(netns node01)" addr del "$a" dev eth0 2>/dev/null || true
    for node in node02 node03; do
      ip -n "$(netns "$node")" route del "${a%.*}.0/24" dev eth0 2>/dev/null || true
    done
  done
  extra_addresses=""
}

# A hosts file: the cluster's common one without node01, then LINES for node01.
hosts_with_node01() {
  local file=$BATS_TEST_TMPDIR/hosts.$1
  shift
  grep -v ' node01$' "$DDP_CLUSTER_DIR/etc/hosts" >"$file"
  printf '%s node01\n' "$@" >>"$file"
  echo "$file"
}

@test "every node exports the same MASTER_ADDR whatever order its hosts file lists" {
  need_torch
  add_extra_addresses
  local n=$DDP_CLUSTER_ID
  # Each node's resolver returns node01's addresses in another order; node01 itself lists a
  # link-local address first, which no node may export.
  "$CLUSTER" set-hosts node01 "$(hosts_with_node01 1 fe80::77:11 192.168.$n.11 172.30.$n.11 $SUBNET.11)"
  "$CLUSTER" set-hosts node02 "$(hosts_with_node01 2 192.168.$n.11 $SUBNET.11 172.30.$n.11)"
  "$CLUSTER" set-hosts node03 "$(hosts_with_node01 3 172.30.$n.11 192.168.$n.11 $SUBNET.11)"
  run "$CLUSTER" run srun -N3 --ddp bash -c 'echo $(hostname) $MASTER_ADDR'
  [ "$status" -eq 0 ]
  # The rule: IPv4 first, then the lowest address (10.77.N.11 < 172.30.N.11 < 192.168.N.11).
  [ "$(sort <<<"$output")" = "node01 $SUBNET.11
node02 $SUBNET.11
node03 $SUBNET.11" ]
  # Within networks=, the same rule picks the lowest address inside them on every node.
  "$CLUSTER" set-plugstack "networks=192.168.0.0/16,172.16.0.0/12"
  run "$CLUSTER" run srun -N3 --ntasks-per-node=1 --ddp /usr/bin/python3 "$REPO/contrib/examples/allreduce.py"
  [ "$status" -eq 0 ]
  [ "$(grep -c "master=192.168.$n.11:.*allreduce_sum=3 expected=3" <<<"$output")" -eq 3 ]
}

@test "a head name that does not resolve: Slurm's NodeAddr stands in for it" {
  local node
  for node in node01 node02 node03; do
    grep -v ' node01$' "$DDP_CLUSTER_DIR/etc/hosts" >"$BATS_TEST_TMPDIR/hosts.noname"
    "$CLUSTER" set-hosts "$node" "$BATS_TEST_TMPDIR/hosts.noname"
  done
  run "$CLUSTER" run srun -v -N3 --ddp bash -c 'echo task $(hostname) $MASTER_ADDR'
  [ "$status" -eq 0 ]
  [ "$(grep '^task ' <<<"$output" | sort)" = "task node01 $SUBNET.11
task node02 $SUBNET.11
task node03 $SUBNET.11" ]
  [[ "$output" == *"ddp: node02: MASTER_ADDR=$SUBNET.11 (Slurm's address for node01"* ]]
}

@test "srun -v says, per node, which address and port were chosen and why" {
  run "$CLUSTER" run env DDP_MASTER_PORT=24567 srun -v -N3 --ddp true
  [ "$status" -eq 0 ]
  for node in node01 node02 node03; do
    grep -F "ddp: $node: MASTER_ADDR=$SUBNET.11 (node01 resolved to $SUBNET.11; " <<<"$output" |
      grep -F "MASTER_PORT=24567 (DDP_MASTER_PORT)"
  done
  run "$CLUSTER" run srun -v -N2 --ddp true
  [ "$status" -eq 0 ]
  # srun's own allocation may come with reserved ports (MpiParams=ports=), else it is derived.
  [ "$(grep -cE 'MASTER_PORT=[0-9]+ \((derived from job [0-9]+ step 0 in port_range=20000-30999|first of Slurm.s reserved ports, SLURM_STEP_RESV_PORTS)\)$' <<<"$output")" -eq 2 ]
  # Without -v the step stays quiet.
  run "$CLUSTER" run srun -N2 --ddp true
  [ "$status" -eq 0 ]
  [[ "$output" != *MASTER_ADDR=* ]]
}

@test "a DNS server that never answers: resolve_timeout= bounds the launch, naming the host and the bound" {
  # A DNS server on the login host that reads every query, logs the name asked, never answers.
  local queries=$BATS_TEST_TMPDIR/dns-queries
  timeout 300 nsenter --net="/run/netns/$(netns login)" /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 53))
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        packet, _ = s.recvfrom(4096)
        labels, i = [], 12
        while i < len(packet) and packet[i]:
            labels.append(packet[i + 1:i + 1 + packet[i]].decode(errors="replace"))
            i += 1 + packet[i]
        print(".".join(labels), file=log)' "$SUBNET.10" "$queries" &
  holder_pid=$!
  await_bound login udp 53
  # node01-dns is in no hosts file, so every node's resolver must ask that server, and glibc
  # itself would wait 30 s (set-dns: one try of 30 s).
  "$CLUSTER" set-dns "$SUBNET.10"
  "$CLUSTER" set-plugstack "host_suffix=-dns resolve_timeout=2"
  for kind in required optional; do
    "$CLUSTER" set-plugstack-kind "$kind"
    start=$EPOCHREALTIME
    run "$CLUSTER" run srun -N3 --ddp bash -c 'echo USER-CODE-RAN'
    took=$(elapsed_since "$start")
    echo "# $kind: step ended after ${took}s, status $status" >&3
    [ "$status" -ne 0 ]
    [[ "$output" != *USER-CODE-RAN* ]]
    [[ "$output" == *'cannot resolve "node01-dns": no answer within 2 s (resolve_timeout= in plugstack.conf); check this node'"'"'s DNS servers'* ]]
    # The bound is the plugin's: well below the resolver's own 30 s.
    awk -v t="$took" 'BEGIN { exit !(t < 20) }'
  done
  # The name really went to the DNS server, which never answered.
  grep -qx 'node01-dns' "$queries"
}

@test "socket_ifname=auto: a real gloo init_process_group runs with the interfaces it names" {
  need_torch
  "$CLUSTER" set-plugstack "socket_ifname=auto"
  run "$CLUSTER" run srun -N3 --ntasks-per-node=1 --ddp bash -c \
    'echo ifname $(hostname) $NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME; exec /usr/bin/python3 "$1"' \
    allreduce "$REPO/contrib/examples/allreduce.py"
  [ "$status" -eq 0 ]
  # NCCL's exact-match syntax, and the bare name Gloo matches exactly ("=eth0" makes Gloo fail
  # with "Unable to find address for: =eth0").
  [ "$(grep '^ifname ' <<<"$output" | sort)" = "ifname node01 =eth0 eth0
ifname node02 =eth0 eth0
ifname node03 =eth0 eth0" ]
  [ "$(grep -c "allreduce_sum=3 expected=3" <<<"$output")" -eq 3 ]
}
