#!/usr/bin/env bats
# ddp-check against intruders on the real cluster: a ddp-check of another job, and of another
# step of the same job, aimed at a waiting rank 0's port is refused and named, never counted;
# garbage and a peer that closes after its hello neither pass the check nor make rank 0 spin
# (its CPU time is measured). Hellos are signed by the cluster's munged (AuthType=auth/munge:
# ddp-check finds its socket in slurm.conf's AuthInfo).

load lib

setup() {
  skip_unless_cluster
  "$CLUSTER" set-plugstack ""
  if [[ -z ${DDP_CHECK_BIN:-} ]]; then
    DDP_CHECK_BIN=$REPO/build/contrib/ddp-check/ddp-check
  fi
  [[ -x ${DDP_CHECK_BIN:-} ]] ||
    skip "ddp-check not found: set DDP_CHECK_BIN=BUILD/.../ddp-check (ctest sets it)"
  work=$(mktemp -d /tmp/ddp-check-auth.XXXXXX)
  chmod 755 "$work"
}

teardown() {
  [[ -n ${victim:-} ]] && kill "$victim" 2>/dev/null
  rm -rf "${work:-/nonexistent}"
}

# victim WORLD TIMEOUT SRUN_ARGS...: starts, in the background, a step of WORLD tasks (one per
# node) in which only rank 0 runs ddp-check, under bash's `time`; rank 1 writes
# "MASTER_ADDR MASTER_PORT SLURM_JOB_ID SLURM_STEP_ID" to $work/master and leaves, so rank 0
# waits for ranks that never come. Output in $work/victim.out; waits for $work/master.
victim() {
  local world=$1 timeout=$2
  shift 2
  # shellcheck disable=SC2016  # expanded by the task's shell
  cl srun "$@" -N"$world" --ntasks-per-node=1 --ddp bash -c '
    if [ "$RANK" = 1 ]; then
      echo "$MASTER_ADDR $MASTER_PORT $SLURM_JOB_ID $SLURM_STEP_ID" > "$1/master.tmp"
      mv "$1/master.tmp" "$1/master"
      exit 0
    fi
    [ "$RANK" = 0 ] || exit 0
    TIMEFORMAT="cpu %3R %3U %3S"
    time "$2" --timeout "$3"' victim "$work" "$DDP_CHECK_BIN" "$timeout" \
    >"$work/victim.out" 2>&1 &
  victim=$!
  for _ in $(seq 100); do
    [[ -s $work/master ]] && break
    sleep 0.1
  done
  read -r addr port job step <"$work/master"
  [[ -n $port ]]
  sleep 0.5  # rank 0 listens by now: it starts before rank 1 writes
}

finish_victim() {
  wait "$victim" && victim_status=0 || victim_status=$?
  victim=""
  cat "$work/victim.out"
}

# absent PATTERN FILE: fails, saying so, when FILE has a line matching PATTERN.
absent() {
  if grep -q -- "$1" "$2"; then
    echo "unexpected in $2: $(grep -m1 -- "$1" "$2")"
    return 1
  fi
}

# The CPU share of rank 0 (user + system over wall time, percent) from its `time` line.
cpu_share() {
  awk '/^cpu / { printf "%.2f\n", 100 * ($3 + $4) / $2 }' "$work/victim.out"
}

@test "a ddp-check of another job aimed at this step's port is refused and named, not counted" {
  victim 2 15  # room for the second job to be scheduled while rank 0 waits
  # A second job, its own real ddp-check pretending to be the missing rank 1 of the first.
  run cl srun -N1 -n1 --ddp bash -c "export MASTER_ADDR=$addr MASTER_PORT=$port RANK=1 \
    WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 NODE_RANK=1 NNODES=2; echo job \$SLURM_JOB_ID; \
    exec $DDP_CHECK_BIN --timeout 4"
  echo "$output"
  intruder_output=$output intruder_status=$status
  intruder_job=$(sed -n 's/^job \([0-9]*\)$/\1/p' <<<"$intruder_output")
  finish_victim
  [ "$intruder_status" -eq 1 ]
  [[ $intruder_output == *"rank 0 at $addr:$port closed the connection without a verdict"* ]]
  [ -n "$intruder_job" ]
  [ "$intruder_job" != "$job" ]
  [ "$victim_status" -eq 1 ]
  grep -qE "^ddp-check: REFUSED: refused a hello from $SUBNET\.1[1-3] \(claims RANK 1 of 2 on node0[1-3], pid [0-9]+\): it belongs to job $intruder_job step 0, this check is job $job step $step$" "$work/victim.out"
  grep -qx "ddp-check: FAULT: missing RANK 1 (WORLD_SIZE=2, 1 distinct arrived): node 1 sent no rank at all" "$work/victim.out"
  absent '^ddp-check: OK' "$work/victim.out"
}

@test "a ddp-check of another step of the same job aimed at this step's port is refused" {
  # One allocation, two steps side by side: step 0 waits, step 1 claims its missing rank.
  cat >"$work/job.sh" <<EOF
#!/bin/bash
srun -N2 --ntasks-per-node=1 --ddp bash -c '
  if [ "\$RANK" = 1 ]; then echo "\$MASTER_ADDR \$MASTER_PORT" > $work/master.tmp; mv $work/master.tmp $work/master; exit 0; fi
  exec $DDP_CHECK_BIN --timeout 6' > $work/step0.out 2>&1 &
while [ ! -s $work/master ]; do sleep 0.1; done
sleep 0.5
read -r addr port < $work/master
srun --overlap -N1 -n1 --ddp bash -c "export MASTER_ADDR=\$addr MASTER_PORT=\$port RANK=1 WORLD_SIZE=2 \
  LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 NODE_RANK=1 NNODES=2; exec $DDP_CHECK_BIN --timeout 4" > $work/step1.out 2>&1
wait
EOF
  jobid=$(cl sbatch --parsable -N2 -o "$work/job.out" "$work/job.sh")
  wait_job_end "$jobid" 60
  cat "$work/step0.out" "$work/step1.out"
  grep -qE "^ddp-check: REFUSED: refused a hello from $SUBNET\.1[1-3] \(claims RANK 1 of 2 on node0[1-3], pid [0-9]+\): it belongs to job $jobid step 1, this check is job $jobid step 0$" "$work/step0.out"
  grep -q "^ddp-check: FAULT: missing RANK 1 (WORLD_SIZE=2, 1 distinct arrived)" "$work/step0.out"
  absent '^ddp-check: OK' "$work/step0.out"
}

@test "garbage, a forged hello and a peer that closes after its hello: no OK, rank 0 idles" {
  victim 3 6
  socket=$DDP_CLUSTER_DIR/munge/munge.socket.2
  body="ddp-check/2 hello rank=2 world=3 local_rank=0 local_world=1 node_rank=2 nnodes=3 nproc=1 pid=1 host=intruder gpus=- if=eth0 if_kind=ethernet addr=$SUBNET.10 nccl=0 job=$job step=$step het=- port=$port auth=munge"
  # A hello of this user for this step (munge, then the peer closes at once): MUNGE vouches
  # for the user, so it counts as RANK 2; RANK 1 stays missing and rank 0 waits.
  # shellcheck disable=SC2016  # expanded by the login host's shell
  cl bash -c '
    exec 3<>"/dev/tcp/$1/$2"; printf "%s cred=%s\n" "$3" "$(printf %s "$3" | munge -S "$4")" >&3; exec 3>&-
    printf "GET / HTTP/1.0\r\n\r\n" >"/dev/tcp/$1/$2"
    printf "%s cred=MUNGE:forged:\n" "${3/rank=2/rank=1}" >"/dev/tcp/$1/$2"
    printf "ddp-check/2 hello rank=1 host=\033[2J\n" >"/dev/tcp/$1/$2"
    sleep 0.2' peer "$addr" "$port" "$body" "$socket"
  finish_victim
  [ "$victim_status" -eq 1 ]
  grep -qE "^2 +intruder +2 " "$work/victim.out"
  grep -qx "ddp-check: REFUSED: refused a connection from $SUBNET.10: not a ddp-check/2 hello: \"GET / HTTP/1.0\"" "$work/victim.out"
  grep -q "^ddp-check: REFUSED: refused a hello from $SUBNET.10 (claims RANK 1 of 3 on intruder, pid 1): MUNGE refused its credential: an invalid credential" "$work/victim.out"
  grep -qx "ddp-check: REFUSED: refused a connection from $SUBNET.10: hello: value of \"host\" is not printable ASCII" "$work/victim.out"
  grep -q "^ddp-check: FAULT: missing RANK 1 (WORLD_SIZE=3, 2 distinct arrived)" "$work/victim.out"
  absent '^ddp-check: OK' "$work/victim.out"
  absent $'\033' "$work/victim.out"
  share=$(cpu_share)
  echo "# rank 0 used ${share}% of a core while it waited" >&3
  awk -v s="$share" 'BEGIN { exit !(s != "" && s < 5) }'
}
