#!/usr/bin/env bash
# ddp-check with real processes on 127.0.0.1, no Slurm: each scenario starts the ranks with
# the environment `srun --ddp` would give them (DDP_CHECK_HOSTNAME fakes the nodes) and checks
# exit codes, the exact diagnosis and that every process ended within the bound. Hellos are
# signed by a private munged this script starts (its own key and socket, stopped at the end);
# hostile scenarios forge, replay and flood hellos and measure rank 0's CPU time.
# Usage: processes.sh PATH/TO/ddp-check SCENARIO   (scenarios: see the case below)
set -uo pipefail

bin=$1
scenario=$2
timeout=3      # --timeout given to every process
slack=1.5      # seconds allowed past the timeout for process start and exit

work=$(mktemp -d)
cleanup() {
  kill "${pids[@]}" 2>/dev/null
  [[ -f $work/munged.pid ]] && kill "$(cat "$work/munged.pid")" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
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

# A munged of this test alone: its own key, socket and replay cache.
start_munged() {
  command -v munged >/dev/null && command -v munge >/dev/null || {
    echo "SKIP: munged and munge are not installed (bash contrib/install-deps.sh)"
    exit 77
  }
  chmod 755 "$work"
  dd if=/dev/urandom of="$work/munge.key" bs=1024 count=1 status=none
  chmod 400 "$work/munge.key"
  munge_sock=$work/munge.sock
  if ! munged --force --socket="$munge_sock" --key-file="$work/munge.key" \
    --pid-file="$work/munged.pid" --log-file="$work/munged.log" --seed-file="$work/munged.seed"; then
    echo "SKIP: munged does not start here: $(tail -1 "$work/munged.log" 2>/dev/null)"
    exit 77
  fi
}
munge_sock=/nonexistent
[[ $scenario == bad-env ]] || start_munged

nccl_flag=--no-nccl
extra=()  # more options for every process (the pairwise scenarios add --pairs)

# start NAME VAR=VALUE... : one ddp-check process with exactly this environment.
start() {
  local name=$1
  shift
  env -i PATH="$PATH" MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" SLURM_JOB_ID=100 SLURM_STEP_ID=0 \
    DDP_CHECK_MUNGE_SOCKET="$munge_sock" "$@" \
    "$bin" --timeout "$timeout" $nccl_flag "${extra[@]}" >"$work/$name.out" 2>&1 &
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

# start_timed NAME LIMIT VAR=VALUE...: like start, in a shell limited to LIMIT descriptors
# (ulimit -n), under bash's `time`: the last line of its output is "cpu REAL USER SYS".
start_timed() {
  local name=$1 limit=$2
  shift 2
  # shellcheck disable=SC2016  # expanded by the inner shell
  env -i PATH="$PATH" MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" SLURM_JOB_ID=100 SLURM_STEP_ID=0 \
    DDP_CHECK_MUNGE_SOCKET="$munge_sock" "$@" \
    bash -c 'ulimit -n "$1"; shift; TIMEFORMAT="cpu %3R %3U %3S"; time "$@"' _ "$limit" \
    "$bin" --timeout "$timeout" $nccl_flag >"$work/$name.out" 2>&1 &
  pids+=($!)
  names+=("$name")
}

# The hello body ddp-check would send for RANK of WORLD in job 100 step 0, to this port.
hello_body() {
  local rank=$1 world=$2 job=${3:-100}
  echo "ddp-check/2 hello rank=$rank world=$world local_rank=0 local_world=1 node_rank=$rank" \
    "nnodes=$world nproc=1 pid=4242 host=intruder gpus=- if=lo if_kind=loopback" \
    "addr=127.0.0.1 nccl=0 job=$job step=0 het=- port=$port auth=munge"
}

# signed BODY [munge options]: BODY with a credential of this user (munge CLI) for it.
signed() {
  local body=$1
  shift
  printf '%s cred=%s' "$body" "$(printf %s "$body" | "$@" munge -S "$munge_sock")"
}

# send LINE: one connection that writes LINE and a newline, then closes (a peer that closes
# after its hello); send_raw TEXT writes TEXT as it is.
send() {
  { printf '%s\n' "$1" >/dev/tcp/127.0.0.1/"$port"; } 2>/dev/null
}
send_raw() {
  { printf '%s' "$1" >/dev/tcp/127.0.0.1/"$port"; } 2>/dev/null
}

held=()
# hold N: N connections that connect and say nothing, held open by this shell until it ends.
hold() {
  local i fd
  for ((i = 0; i < $1; i++)); do
    exec {fd}<>/dev/tcp/127.0.0.1/"$port" || break
    held+=("$fd")
  done
}

# Waits until something listens on $port (rank 0 started).
await_listener() {
  for _ in $(seq 50); do
    { : </dev/tcp/127.0.0.1/"$port"; } 2>/dev/null && return
    sleep 0.05
  done
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

# expect_cpu NAME MAX_PERCENT: NAME's CPU time (user + system) stayed under MAX_PERCENT of
# its wall time.
expect_cpu() {
  local line
  line=$(grep '^cpu ' "$work/$1.out" | tail -1)
  if ! awk -v m="$2" '{ share = 100 * ($3 + $4) / $2; printf "%s: rank 0 used %.2f%% of a core (%.3f s CPU in %.3f s)\n", "cpu", share, $3 + $4, $2; exit !(share < m) }' <<<"$line"; then
    echo "FAIL: $1 used more than $2% of a core: ${line:-no cpu line}"
    failures=$((failures + 1))
  fi
}

expect_no_out() {
  if grep -qF -- "$2" "$work/$1.out"; then
    echo "FAIL: $1 printed: $2"
    failures=$((failures + 1))
  fi
}

# --- the pairwise phase (--pairs) ---
# Every node's agent registers on MASTER_PORT + 1 with a line its credential signs:
# "agent NODE DATAPORT JOB STEP MASTER_PORT AUTH CRED nccl" (the credential signs the line
# without CRED).
pairs_port=$((port + 1))
# Loopback figures of a loaded machine differ by 10x between pairs: only a node an order of
# magnitude below the others would be slow, so a node named here was named for what it sent.
pairs_opts=(--pairs --pairs-seconds 0.1 --pairs-threshold 0.01)

# agent_line NODE [JOB] [munge options]: a registration of this user's credential for NODE.
agent_line() {
  local node=$1 job=${2:-100}
  shift 2 2>/dev/null || shift $#
  local body="agent $node 1 $job 0 $port munge nccl"
  printf 'agent %s 1 %s 0 %s munge %s nccl' "$node" "$job" "$port" \
    "$(printf %s "$body" | "$@" munge -S "$munge_sock")"
}

# send_pairs LINE: LINE on its own connection to the pairwise port, once it listens.
send_pairs() {
  for _ in $(seq 400); do
    { printf '%s\n' "$1" >/dev/tcp/127.0.0.1/"$pairs_port"; } 2>/dev/null && return
    sleep 0.01
  done
}

# fake_rank MODE [WORLD]: RANK 1 of WORLD (default 3) ("intruder", node index 1) as a script of this user: a signed
# hello, then a signed agent that misbehaves as MODE says: impostors (forged registrations
# naming node2 before its own), wrong-name (a signed registration naming node3, which is no
# node of the step), a figure (inf, nan, -3, 1e308), stale (answers with an old
# tag), hang (registers, then never answers). Its output goes to $work/fake.out.
fake_rank() {
  local mode=$1 world=${2:-3} h c line tag
  await_listener
  exec {h}<>/dev/tcp/127.0.0.1/"$port"
  if [[ $fake_auth == none ]]; then
    printf '%s cred=-\n' "$(hello_body 1 "$world" | sed 's/auth=munge$/auth=none/')" >&"$h"
  else
    printf '%s\n' "$(signed "$(hello_body 1 "$world")")" >&"$h"
  fi
  read -r -t 20 -u "$h" line && echo "verdict: $line"
  if [[ $mode == impostors ]]; then
    send_pairs "agent node2 1 100 0 $port none - nccl"
    send_pairs "agent node2 1 100 0 $port munge MUNGE:AwQFAAD2forged0credential: nccl"
    send_pairs "$(agent_line node2 100 setpriv --reuid=65534 --regid=65534 --clear-groups)"
    send_pairs "$(agent_line node2 101)"
    send_pairs "$(agent_line node2 | sed 's/^agent node2 /agent node0 /')"
    send_pairs "ddp-check: suspect node2: slow: forged by an impostor"
    sleep 0.3
  fi
  if [[ $mode == wrong-name ]]; then
    # This user's own credential, for this step, from a node's address: only the name is wrong.
    send_pairs "$(agent_line node3)"
    sleep 0.3
  fi
  for _ in $(seq 400); do
    exec {c}<>/dev/tcp/127.0.0.1/"$pairs_port" 2>/dev/null && break
    sleep 0.01
  done
  if [[ $fake_auth == none ]]; then
    printf 'agent intruder 1 100 0 %s none - nccl\n' "$port" >&"$c"
  else
    printf '%s\n' "$(agent_line intruder)" >&"$c"
  fi
  while read -r -t 30 -u "$c" line; do
    echo "got: $line"
    [[ $line == "done" ]] && break
    [[ $mode == hang ]] && continue
    read -r _ tag _ <<<"$line"
    case $line in
      serve*) printf 'served %s\n' "$tag" >&"$c" ;;
      measure*)
        case $mode in
          stale) printf 'result %s 9.0 50.0\n' "$((tag + 1000))" >&"$c" ;;
          impostors | wrong-name) printf 'result %s - - the fake measures nothing\n' "$tag" >&"$c" ;;
          *) printf 'result %s %s 50.0\n' "$tag" "$mode" >&"$c" ;;
        esac
        ;;
    esac
  done
  exec {c}>&- {h}>&-
}

fake_auth=munge  # none: the fake's hello and registration are unsigned (--auth=none)

# pairs_world MODE: rank 0 (node0) and rank 2 (node2) real, RANK 1 the fake (fake_rank MODE).
pairs_world() {
  extra=("${pairs_opts[@]}")
  rank 0 0 0 node0 3 1 3
  rank 2 0 2 node2 3 1 3
  fake_rank "$1" >"$work/fake.out" 2>&1 &
  pids+=($!)
  names+=(fake)
}

# hold_data_ports: an outsider (this shell) that, once the pairwise port listens, connects to
# every other port the ddp-check processes listen on, again and again, and sends nothing or a
# wrong nonce; what it found goes to $work/holder.out.
hold_data_ports() {
  local fds=() seen=" $port $pairs_port " p fd pid inode
  for _ in $(seq 300); do
    for pid in "${pids[@]}"; do
      for inode in $(find /proc/"$pid"/fd -lname 'socket:*' -printf '%l\n' 2>/dev/null | tr -dc '0-9\n'); do
        for p in $(awk -v i="$inode" '$4 == "0A" && $10 == i { split($2, a, ":"); print a[2] }' /proc/net/tcp /proc/net/tcp6 2>/dev/null); do
          p=$((16#$p))
          [[ $seen == *" $p "* ]] && continue
          seen+="$p "
          echo "held data port $p"
        done
      done
    done
    for p in $seen; do
      [[ $p == "$port" || $p == "$pairs_port" ]] && continue
      exec {fd}<>/dev/tcp/127.0.0.1/"$p" 2>/dev/null || continue
      fds+=("$fd")
      ((${#fds[@]} % 2)) && { printf '%032x\n' "$RANDOM" >&"$fd"; } 2>/dev/null
    done
    ((${#fds[@]} > 600)) && break
    sleep 0.02
  done >"$work/holder.out" 2>&1
  sleep 30
}

# expect_no_healthy_named: neither node0 nor node2 (the real, healthy nodes) is named.
expect_no_healthy_named() {
  expect_no_out rank0-node0-0 "ddp-check: suspect node0:"
  expect_no_out rank0-node0-0 "ddp-check: suspect node2:"
  if grep -qE '^ +[0-9]+ node[02] .* SLOW$' "$work/rank0-node0-0.out"; then
    echo "FAIL: a healthy node's row of the table says SLOW"
    failures=$((failures + 1))
  fi
  # Nothing a peer sent reads as a verdict: no suspect line but at the start of a line.
  if grep -v '^ddp-check: suspect ' "$work/rank0-node0-0.out" | grep -q 'ddp-check: suspect'; then
    echo "FAIL: rank 0 printed a suspect line inside another line"
    failures=$((failures + 1))
  fi
}

t0=$(date +%s.%N)
case "$scenario" in
  pairs-healthy)  # three real nodes: every pair measured, no node named
    timeout=20
    extra=("${pairs_opts[@]}")
    rank 0 0 0 node0 3 1 3
    rank 1 0 1 node1 3 1 3
    rank 2 0 2 node2 3 1 3
    finish
    expect_all_rc 0
    expect_out rank0-node0-0 "pairs: round 3 of 3 done"
    expect_out rank0-node0-0 "ddp-check: pairs: OK"
    expect_no_out rank0-node0-0 "suspect"
    ;;
  pairs-impostor)  # registrations naming node2 without this user's credential for this step
    timeout=20
    pairs_world impostors
    finish
    expect_rc rank0-node0-0 1  # the fake's data port takes nothing: its pairs are not measured
    expect_out rank0-node0-0 "ddp-check: pairs: REFUSED: refused a pairwise agent from 127.0.0.1 (claims node node2): its registration carries no MUNGE credential"
    expect_out rank0-node0-0 "(claims node node2): MUNGE refused its credential: an invalid credential"
    expect_out rank0-node0-0 "(claims node node2): its credential is of uid 65534, this job runs as uid $(id -u)"
    expect_out rank0-node0-0 "(claims node node2): its registration belongs to job 101 step 0, this check is job 100 step 0"
    expect_out rank0-node0-0 "(claims node node0): its credential signs another hello"
    expect_out rank0-node0-0 "refused a pairwise agent from 127.0.0.1: not a registration of this version of ddp-check"
    expect_out rank0-node0-0 "pairs: not measured: node0 - intruder: cannot connect to 127.0.0.1"
    expect_no_healthy_named
    ;;
  pairs-wrong-name)  # a registration of this user and step that names a node not at its address
    timeout=20
    pairs_world wrong-name
    finish
    expect_rc rank0-node0-0 1  # the fake's data port takes nothing: its pairs are not measured
    expect_out rank0-node0-0 "ddp-check: pairs: REFUSED: refused a pairwise agent from 127.0.0.1 (claims node node3): it claims node node3, but the step's nodes at its address are node0, intruder, node2"
    expect_out rank0-node0-0 "pairs: not measured: node0 - intruder: cannot connect to 127.0.0.1"
    expect_no_out rank0-node0-0 "node3:"
    if grep -qE '^ +[0-9]+ node3 ' "$work/rank0-node0-0.out"; then
      echo "FAIL: the table has a row for node3, which is no node of the step"
      failures=$((failures + 1))
    fi
    expect_no_healthy_named
    ;;
  pairs-inf|pairs-nan|pairs-negative|pairs-absurd)  # the fake measures and reports a bad figure
    timeout=20
    case $scenario in
      pairs-inf) pairs_world inf ;;
      pairs-nan) pairs_world nan ;;
      pairs-negative) pairs_world -3 ;;
      pairs-absurd) pairs_world 1e308 ;;
    esac
    finish
    expect_rc rank0-node0-0 1
    expect_out rank0-node0-0 "ddp-check: suspect intruder: unreachable: its pairwise agent answered what rank 0 refuses (a malformed or out-of-bounds figure) (TCP round 1)"
    expect_no_healthy_named
    ;;
  pairs-stale)  # the fake answers with another pair's tag: discarded, the fake did not answer
    timeout=25
    pairs_world stale
    finish
    expect_rc rank0-node0-0 1
    expect_out rank0-node0-0 "ddp-check: suspect intruder: unreachable: its pairwise agent did not answer in time (TCP round 1)"
    expect_no_healthy_named
    ;;
  pairs-hung)  # the fake registers and never answers: named as silent, its measurer is not
    timeout=25
    pairs_world hang
    finish
    expect_rc rank0-node0-0 1
    expect_out rank0-node0-0 "ddp-check: suspect intruder: unreachable: its pairwise agent did not answer in time (TCP round 1)"
    expect_out rank0-node0-0 "pairs: intruder did not answer in time (TCP round 1)"
    expect_no_healthy_named
    ;;
  pairs-hung-two)  # two nodes, the fake's agent hangs: it is named, rank 0's own node is not
    timeout=25
    extra=("${pairs_opts[@]}")
    rank 0 0 0 node0 2 1 2
    fake_rank hang 2 >"$work/fake.out" 2>&1 &
    pids+=($!)
    names+=(fake)
    finish
    expect_rc rank0-node0-0 1
    expect_out rank0-node0-0 "ddp-check: suspect intruder: unreachable: its pairwise agent did not answer in time (TCP round 1)"
    expect_out rank0-node0-0 "pairs: no slow node named: fewer than 3 nodes"
    expect_no_healthy_named
    ;;
  pairs-auth-none-hung)  # --auth=none: the silent agent is named for people, not for ddp-watch
    timeout=25
    extra=("${pairs_opts[@]}")
    fake_auth=none
    rank 0 0 0 node0 2 1 2 DDP_CHECK_AUTH=none DDP_CHECK_RUN_TAG=0123456789abcdef
    fake_rank hang 2 >"$work/fake.out" 2>&1 &
    pids+=($!)
    names+=(fake)
    finish
    expect_rc rank0-node0-0 1
    expect_out rank0-node0-0 "ddp-check: unauthenticated, not acted on: suspect intruder: unreachable: its pairwise agent did not answer in time (TCP round 1)"
    expect_no_out rank0-node0-0 "ddp-check: suspect"
    ;;
  pairs-odd-one-round)  # three nodes, one round: node0 sits it out and is not named slow
    timeout=20
    extra=("${pairs_opts[@]}" --pairs-rounds 1)
    rank 0 0 0 node0 3 1 3
    rank 1 0 1 node1 3 1 3
    rank 2 0 2 node2 3 1 3
    finish
    expect_all_rc 0
    expect_out rank0-node0-0 "pairs: 3 nodes, 1 of 3 rounds"
    expect_out rank0-node0-0 "pairs: no slow node named: fewer than 3 nodes measured"
    expect_out rank0-node0-0 "ddp-check: pairs: OK"
    expect_no_out rank0-node0-0 "suspect"
    ;;
  pairs-auth-none)  # --auth=none: registrations bound to the step, unsigned, the check passes
    timeout=20
    extra=("${pairs_opts[@]}")
    rank 0 0 0 node0 3 1 3 DDP_CHECK_AUTH=none
    rank 1 0 1 node1 3 1 3 DDP_CHECK_AUTH=none
    rank 2 0 2 node2 3 1 3 DDP_CHECK_AUTH=none
    finish
    expect_all_rc 0
    expect_out rank0-node0-0 "ddp-check: pairs: OK"
    expect_no_out rank0-node0-0 "REFUSED"
    ;;
  pairs-held)  # an outsider holds every data port with silent and wrong-nonce connections
    timeout=20
    extra=(--pairs --pairs-seconds 0.3 --pairs-threshold 0.01)
    rank 0 0 0 node0 3 1 3
    rank 1 0 1 node1 3 1 3
    rank 2 0 2 node2 3 1 3
    hold_data_ports &
    holder=$!
    finish
    kill "$holder" 2>/dev/null
    wait "$holder" 2>/dev/null
    cat "$work/holder.out"
    if ! grep -q "held data port" "$work/holder.out"; then
      echo "FAIL: the outsider found no data port to hold"
      failures=$((failures + 1))
    fi
    expect_all_rc 0
    expect_out rank0-node0-0 "ddp-check: pairs: OK"
    expect_no_out rank0-node0-0 "suspect"
    expect_no_out rank0-node0-0 "not measured"
    ;;
  pairs-forged-suspect)  # an outsider sends rank 0 a suspect line: refused, never quoted as one
    timeout=6
    rank 0 0 0 node0 2 1 2
    await_listener
    send "ddp-check: suspect node1: slow: forged from outside the job"
    send "ddp-check/2 hello rank=1 host=x ddp-check: suspect node1: slow: x"
    rank 1 0 1 node1 2 1 2
    finish
    expect_all_rc 0
    expect_out rank0-node0-0 "ddp-check: REFUSED: refused a connection from 127.0.0.1: "
    expect_out rank0-node0-0 "ddp-check\x3a suspect node1"
    expect_no_out rank0-node0-0 "ddp-check: suspect"
    ;;
  healthy)  # 2 nodes x 3 ranks, one GPU each
    for r in 0 1 2 3 4 5; do
      rank $r $((r % 3)) $((r / 3)) "node$((r / 3))" 6 3 2 CUDA_VISIBLE_DEVICES=$((r % 3))
    done
    finish
    expect_all_rc 0
    expect_out rank0-node0-0 "NODE  HOST   RANKS  LOCAL RANKS  GPUS   INTERFACE      ADDRESS"
    expect_out rank0-node0-0 "0     node0  0-2    0-2          0,1,2  lo (loopback)  127.0.0.1"
    expect_out rank0-node0-0 "1     node1  3-5    0-2          0,1,2  lo (loopback)  127.0.0.1"
    expect_out rank0-node0-0 "socket_ifname=auto sets NCCL_SOCKET_IFNAME==lo GLOO_SOCKET_IFNAME=lo"
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
  silent-half)  # one of the step's two nodes silent: either side may be at fault, nobody named
    rank 0 0 0 node0 2 1 2 SLURM_STEP_NODELIST="node[0-1]"
    finish
    expect_rc rank0-node0-0 1
    expect_out rank0-node0-0 "ddp-check: no node named: 1 of the step's 2 nodes sent rank 0 on node0 no hello: with as many silent nodes as answering ones, the fault may lie on either side"
    expect_no_out rank0-node0-0 "ddp-check: suspect"
    ;;
  silent-most)  # two of three nodes silent: rank 0's own node is the likelier culprit
    rank 0 0 0 node0 3 1 3 SLURM_STEP_NODELIST="node[0-2]"
    finish
    expect_rc rank0-node0-0 1
    expect_out rank0-node0-0 "ddp-check: suspect node0: unreachable: 2 of the step's 3 nodes sent rank 0 on node0 no hello"
    expect_no_out rank0-node0-0 "no node named"
    ;;
  silent-tagged)  # DDP_CHECK_RUN_TAG, as ddp-watch sets it, ends the suspect line
    rank 0 0 0 node0 3 1 3 SLURM_STEP_NODELIST="node[0-2]" DDP_CHECK_RUN_TAG=0123456789abcdef
    finish
    expect_rc rank0-node0-0 1
    expect_out rank0-node0-0 "ddp-check: suspect node0: unreachable: 2 of the step's 3 nodes sent rank 0 on node0 no hello [run 0123456789abcdef]"
    ;;
  silent-unauthenticated)  # --auth=none: the suspect is said in a form ddp-watch never acts on
    rank 0 0 0 node0 3 1 3 SLURM_STEP_NODELIST="node[0-2]" DDP_CHECK_AUTH=none
    finish
    expect_rc rank0-node0-0 1
    expect_out rank0-node0-0 "ddp-check: unauthenticated, not acted on: suspect node0: unreachable: 2 of the step's 3 nodes sent rank 0 on node0 no hello"
    expect_no_out rank0-node0-0 "ddp-check: suspect"
    ;;
  bad-run-tag)  # a run tag that is not one is refused before anything is printed with it
    rank 0 0 0 node0 1 1 1 'DDP_CHECK_RUN_TAG=x]: slow'
    finish
    expect_rc rank0-node0-0 2
    expect_out rank0-node0-0 "ddp-check: error: DDP_CHECK_RUN_TAG=\"x]: slow\": not a run tag"
    ;;
  inconsistent)  # one rank believes WORLD_SIZE=6
    rank 0 0 0 node0 4 2 2
    rank 1 1 0 node0 4 2 2
    rank 2 0 1 node1 4 2 2
    rank 3 1 1 node1 6 2 2
    finish
    expect_all_rc 1
    expect_out rank0-node0-0 "ddp-check: FAULT: inconsistent WORLD_SIZE: ranks 0-2 (node[0-1]) say 4, rank 3 (node1) says 6"
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
  other-job)  # a real ddp-check of job 101 aimed at job 100's port: refused, named, not counted
    rank 0 0 0 node0 2 1 2
    rank 1 0 1 node1 2 1 2 SLURM_JOB_ID=101
    finish
    expect_rc rank0-node0-0 1
    expect_out rank0-node0-0 "ddp-check: REFUSED: refused a hello from 127.0.0.1 (claims RANK 1 of 2 on node1, pid "
    expect_out rank0-node0-0 "): it belongs to job 101 step 0, this check is job 100 step 0"
    expect_out rank0-node0-0 "ddp-check: FAULT: missing RANK 1 (WORLD_SIZE=2, 1 distinct arrived)"
    expect_out rank0-node0-0 "ddp-check: FAULT: 1 connection refused, not counted: refused a hello from 127.0.0.1"
    expect_no_out rank0-node0-0 "ddp-check: OK"
    ;;
  other-step)  # a rank left over from an earlier step on the same MASTER_PORT
    rank 0 0 0 node0 2 1 2 SLURM_STEP_ID=4
    rank 1 0 1 node1 2 1 2 SLURM_STEP_ID=3
    finish
    expect_rc rank0-node0-0 1
    expect_out rank0-node0-0 "): it belongs to job 100 step 3, this check is job 100 step 4"
    expect_out rank0-node0-0 "ddp-check: FAULT: missing RANK 1"
    ;;
  forged)  # stray processes claim the missing rank: no credential, a forged one, another user's
    rank 0 0 0 node0 2 1 2
    await_listener
    send "$(hello_body 1 2 | sed 's/auth=munge/auth=none/') cred=-"
    send "$(hello_body 1 2) cred=MUNGE:AwQFAAD2forged0credential:"
    send "$(signed "$(hello_body 1 2)" setpriv --reuid=65534 --regid=65534 --clear-groups)"
    send "$(signed "$(hello_body 1 2 | sed 's/pid=4242/pid=1/')" | sed 's/pid=1/pid=4242/')"
    send "ddp-check/2 hello rank=1 host=$(printf 'x\033]0;owned\007')"
    finish
    expect_rc rank0-node0-0 1
    expect_out rank0-node0-0 "(claims RANK 1 of 2 on intruder, pid 4242): it carries no MUNGE credential"
    expect_out rank0-node0-0 "(claims RANK 1 of 2 on intruder, pid 4242): MUNGE refused its credential: an invalid credential"
    expect_out rank0-node0-0 "(claims RANK 1 of 2 on intruder, pid 4242): its credential is of uid 65534, this job runs as uid $(id -u)"
    expect_out rank0-node0-0 "(claims RANK 1 of 2 on intruder, pid 4242): its credential signs another hello"
    expect_out rank0-node0-0 'refused a connection from 127.0.0.1: hello: value of "host" is not printable ASCII'
    expect_out rank0-node0-0 "ddp-check: FAULT: missing RANK 1"
    expect_no_out rank0-node0-0 "ddp-check: OK"
    if grep -q $'\033' "$work/rank0-node0-0.out"; then
      echo "FAIL: an escape character reached rank 0's output"
      failures=$((failures + 1))
    fi
    ;;
  replayed)  # a valid hello sent twice: MUNGE refuses the copy, so it cannot fill RANK 2
    rank 0 0 0 node0 3 1 3
    await_listener
    line=$(signed "$(hello_body 1 3)")
    send "$line"
    send "$line"
    finish
    expect_rc rank0-node0-0 1
    expect_out rank0-node0-0 "(claims RANK 1 of 3 on intruder, pid 4242): MUNGE refused its credential: a replayed credential (MUNGE decoded it before)"
    expect_out rank0-node0-0 "ddp-check: FAULT: missing RANK 2 (WORLD_SIZE=3, 2 distinct arrived)"
    expect_no_out rank0-node0-0 "duplicate RANK 1"
    ;;
  huge-world)  # a signed hello claiming WORLD_SIZE=4294967295 does not make rank 0 wait for it
    timeout=20
    rank 0 0 0 node0 2 1 2
    await_listener
    send "$(signed "$(hello_body 1 4294967295)")"
    finish
    expect_rc rank0-node0-0 1
    expect_out rank0-node0-0 "ddp-check: FAULT: inconsistent WORLD_SIZE: rank 0 (node0) says 2, rank 1 (intruder) says 4294967295"
    awk -v e="$elapsed" 'BEGIN { exit !(e < 5) }' || { echo "FAIL: rank 0 waited ${elapsed}s"; failures=$((failures + 1)); }
    ;;
  hostile-cpu)  # rank 0 waits for a missing rank among hostile peers: bounded, and it idles
    timeout=4
    start_timed rank0 1024 RANK=0 LOCAL_RANK=0 NODE_RANK=0 DDP_CHECK_HOSTNAME=node0 WORLD_SIZE=4 \
      LOCAL_WORLD_SIZE=1 NNODES=4
    await_listener
    rank 1 0 1 node1 4 1 4
    send "$(signed "$(hello_body 2 4)")"              # signed, then closed at once
    hold 200                                           # idle connections, never a hello
    send "GET / HTTP/1.0"$'\r\n\r'                    # garbage, then closed
    head -c 100000 /dev/zero | tr '\0' 'x' >/dev/tcp/127.0.0.1/"$port" 2>/dev/null  # oversized
    send_raw "ddp-check/2 hello rank=3"                # a partial hello, then closed
    finish
    expect_rc rank0 1
    expect_out rank0 "ddp-check: FAULT: missing RANK 3 (WORLD_SIZE=4, 3 distinct arrived)"
    expect_out rank0 "refused a connection from 127.0.0.1: not a ddp-check/2 hello"
    expect_out rank0 "refused a connection from 127.0.0.1: a line longer than 16384 bytes"
    expect_out rank0 "refused a connection from 127.0.0.1: closed the connection inside its hello"
    expect_out rank1-node1-0 "FAILED (verdict of rank 0): missing RANK 3"
    expect_cpu rank0 "${DDP_CHECK_CPU_BOUND:-5}"
    ;;
  line-flood)  # before their hellos, 8 peers stream short complete lines (64 MiB of "x" each):
    timeout=15   # rank 0 keeps one hello's worth (16 KiB) of each and refuses it at its first line;
                 # the bound leaves room for the flood itself on a loaded machine (rank 0 ends as soon
                 # as rank 1 arrives, so a passing run is no slower)
    start rank0 RANK=0 LOCAL_RANK=0 NODE_RANK=0 DDP_CHECK_HOSTNAME=node0 WORLD_SIZE=2 \
      LOCAL_WORLD_SIZE=1 NNODES=2
    await_listener
    base=$(awk '/^VmRSS/ { print $2 }' "/proc/${pids[0]}/status")
    python3 -c 'import socket, sys, threading
def flood():
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    try:
        s.sendall(b"x\n" * (32 << 20))
    except OSError:
        pass
threads = [threading.Thread(target=flood) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()' "$port"
    peak=$(awk '/^VmHWM/ { print $2 }' "/proc/${pids[0]}/status" 2>/dev/null)
    rank 1 0 1 node1 2 1 2
    finish
    expect_all_rc 0
    expect_out rank0 'refused a connection from 127.0.0.1: not a ddp-check/2 hello: "x"'
    echo "rank 0: resident ${base} KiB before the flood, peak ${peak} KiB"
    if [[ -z "$peak" || -z "$base" ]]; then
      echo "FAIL: rank 0 ended before its resident size could be read"
      failures=$((failures + 1))
    elif ((peak - base > 4096)); then
      echo "FAIL: rank 0 grew by $((peak - base)) KiB during the flood (bound 4096 KiB)"
      failures=$((failures + 1))
    fi
    ;;
  fd-limit)  # idle connections take every descriptor rank 0 may hold: the rank behind them
    timeout=6  # waits in the backlog until they are cut off, and rank 0 never spins
    start_timed rank0 64 RANK=0 LOCAL_RANK=0 NODE_RANK=0 DDP_CHECK_HOSTNAME=node0 WORLD_SIZE=2 \
      LOCAL_WORLD_SIZE=1 NNODES=2
    await_listener
    hold 40
    sleep 0.2
    rank 1 0 1 node1 2 1 2
    finish
    expect_all_rc 0
    expect_out rank0 "ddp-check: OK: 2 ranks on 2 nodes"
    expect_out rank0 "sent no complete hello within 3 s"
    expect_cpu rank0 "${DDP_CHECK_CPU_BOUND:-5}"
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
