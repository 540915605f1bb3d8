#!/usr/bin/env bash
# ddp-watch --heal outside Slurm against hostile input, on real processes (about 10 s): srun,
# scontrol and squeue are stand-ins on PATH (the fake srun prints what a task or srun would,
# scontrol logs what it is asked). Each hostile case must end with no node excluded; the
# controls show that srun's own lines still are acted on, within the cap.
# Usage: hostile.sh DDP_WATCH
set -euo pipefail
watch=${1:?usage: hostile.sh DDP_WATCH}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
mkdir bin
# srun: prints $FAKE_OUT on stdout and $FAKE_ERR on stderr (printf escapes), exits 1. In
# FAKE_OUT, @TAG@ stands for the run tag ddp-watch gave the step (DDP_CHECK_RUN_TAG).
cat >bin/srun <<'SH'
#!/bin/sh
printf "%b" "$(printf '%s' "${FAKE_OUT:-}" | sed "s/@TAG@/${DDP_CHECK_RUN_TAG:-}/g")"
printf "%b" "${FAKE_ERR:-}" >&2
exit 1
SH
cat >bin/scontrol <<'SH'
#!/bin/sh
echo "$*" >>"$FAKE_LOG"
case "$1 $2" in
  "show partition") [ "${FAKE_TOTAL:-8}" = none ] || echo "PartitionName=$4 TotalNodes=${FAKE_TOTAL:-8}" ;;
  "show job") echo "JobId=$4 ExcNodeList=(null)" ;;
esac
exit 0
SH
printf '#!/bin/sh\nexit 0\n' >bin/squeue
chmod +x bin/*
export PATH=$work/bin:$PATH FAKE_LOG=$work/scontrol.log SLURM_JOB_ID=42
export SLURM_JOB_NODELIST='node[01-03]' SLURM_JOB_PARTITION=debug SLURM_RESTART_COUNT=0
unset SLURM_ARRAY_JOB_ID SLURM_ARRAY_TASK_ID SLURM_LABELIO

cases=0
skipped=()
# heal NAME COMMAND...: runs ddp-watch --heal rec -- COMMAND with FAKE_OUT/FAKE_ERR set by the
# caller, at most 20 s; its stderr is in err, the scontrol calls in scontrol.log.
heal() {
  local name=$1
  shift
  rm -f scontrol.log
  : >scontrol.log
  local status=0
  timeout 20 "$watch" --timeout 30s --heal rec -- "$@" >out 2>err || status=$?
  ((status != 124)) || fail "$name: ddp-watch blocked for 20 s: $(cat err)"
  cases=$((cases + 1))
}
# excluded_none NAME: nothing excluded, no node named in an exclusion.
excluded_none() {
  grep -q 'ExcNodeList' scontrol.log && fail "$1: excluded: $(cat scontrol.log)"
  grep -q 'heal: excluding' err && fail "$1: $(cat err)"
  return 0
}

FAKE_ERR='1: srun: error: Node failure on node02\n' heal "a task's node failure line" srun python t.py
excluded_none "a task's node failure line"
FAKE_ERR='0: 10%%|#\rsrun: error: node02: task 1: Bus error\n' heal "after a carriage return" srun python t.py
excluded_none "after a carriage return"
FAKE_OUT='srun: error: Node failure on node02\n' heal "unlabelled on stdout" srun python t.py
excluded_none "unlabelled on stdout"
table='0: Root Cause (first observed failure):\n0: [0]:\n0:   host      : node02\n'
table+='0:   rank      : 1 (local_rank: 0)\n0:   exitcode  : -7 (pid: 9)\n0: =====\n'
FAKE_ERR=$table heal "a torchrun table" srun torchrun t.py
excluded_none "a torchrun table"
FAKE_OUT='0: ddp-check: suspect node02: slow: x\n' heal "a training program's suspect line" srun python t.py
excluded_none "a training program's suspect line"
FAKE_OUT='1: ddp-check: suspect node02: slow: x\n' heal "another task's suspect line" srun ddp-check
excluded_none "another task's suspect line"
FAKE_OUT='0: REFUSED x: ddp-check: suspect node02: slow: x\n' heal "a quoted suspect line" srun ddp-check
excluded_none "a quoted suspect line"

# A flood line of srun's own: counted, not expanded, said, in well under the 20 s.
start=$SECONDS
FAKE_ERR='srun: error: Node failure on n[000000-099999]\n' heal "a flood line" srun python t.py
excluded_none "a flood line"
grep -q 'srun named 100000 nodes in one line, more than 1024: not read as evidence' err ||
  fail "a flood line: not said: $(cat err)"
((SECONDS - start < 5)) || fail "a flood line took $((SECONDS - start)) s"

# Planted records: a link to a file of the user's, a FIFO, a character device like /dev/zero.
rm -f rec rec.*
echo "precious" >precious
ln -s precious rec
FAKE_ERR='1: x\n' heal "a symlink record" srun python t.py
grep -q 'rec: a symbolic link, not followed; starting a new record' err ||
  fail "a symlink record: $(cat err)"
[[ $(cat precious) == precious ]] || fail "a symlink record: the link was followed"
[[ -f rec && ! -L rec ]] || fail "a symlink record: not replaced by a record of its own"
[[ $(stat -c %a rec) == 600 ]] || fail "a symlink record: mode $(stat -c %a rec)"
rm -f rec
mkfifo rec
FAKE_ERR='1: x\n' heal "a FIFO record" srun python t.py
grep -q 'rec: not a regular file, not read; starting a new record' err || fail "a FIFO record: $(cat err)"
rm -f rec
if mknod rec c 1 5 2>/dev/null; then
  FAKE_ERR='1: x\n' heal "a /dev/zero record" srun python t.py
  grep -q 'rec: not a regular file, not read; starting a new record' err ||
    fail "a /dev/zero record: $(cat err)"
  rm -f rec
else
  # ctest passes or skips a whole test, not a part: the device case is said SKIPPED and left
  # out of the count, and a Unix socket, a file that is not a regular one and needs no root,
  # is planted in its place (opening one fails with ENXIO).
  skipped+=("a /dev/zero record (mknod refused here: not root, or a nodev mount)")
  echo "SKIPPED: ${skipped[-1]}; a Unix socket record is tried in its place"
  python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' rec
  [[ -S rec ]] || fail "a Unix socket record: not made"
  FAKE_ERR='1: x\n' heal "a Unix socket record" srun python t.py
  grep -q 'rec: No such device or address; starting a new record' err ||
    fail "a Unix socket record: $(cat err)"
  rm -f rec
fi
# A record an earlier job with the same id left: a first run never reads one.
printf 'job\t42\t0\nunblamed\t1\n' >rec
chmod 600 rec
FAKE_ERR='1: x\n' heal "an earlier job's record" srun python t.py
grep -q "rec: not this job's record (it was written by run 0, this is run 0: an earlier job with the same id); starting a new one" err ||
  fail "an earlier job's record: $(cat err)"
grep -q 'requeueing once as it is' err || fail "an earlier job's record was believed: $(cat err)"
rm -f rec rec.*

# Controls: srun's own SIGBUS line excludes node02 and requeues, leaving a record of this job;
# past the partition's room, or the partitions' together, or when the size is unknown, the job
# fails with the list instead.
FAKE_ERR='srun: error: node02: task 1: Bus error\n' heal "srun's own SIGBUS line" srun python t.py
grep -qx 'update JobId=42 ExcNodeList=node02' scontrol.log || fail "control: $(cat err) $(cat scontrol.log)"
[[ $(head -n 1 rec) == $'job\t42\t0' ]] || fail "control: record $(cat rec)"
rm -f rec
FAKE_TOTAL=3 FAKE_ERR='srun: error: node02: task 1: Bus error\n' heal "past the cap" srun python t.py
excluded_none "past the cap"
grep -q "heal: not requeueing: excluding 1 more would leave 2 of the partition's 3 nodes (0 excluded already) for a job of 3; the job ends, naming node02" err ||
  fail "past the cap: $(cat err)"
grep -q '^requeue' scontrol.log && fail "past the cap: requeued"
[[ ! -e rec ]] || fail "past the cap: the record of an ended job is left"
# Submitted to two partitions (-p a,b) of 1 node each: 2 in all, no room for a job of 3 less one.
SLURM_JOB_PARTITION=a,b FAKE_TOTAL=1 FAKE_ERR='srun: error: node02: task 1: Bus error\n' \
  heal "past two partitions" srun python t.py
excluded_none "past two partitions"
grep -qx 'show partition -o a' scontrol.log || fail "past two partitions: a not asked: $(cat scontrol.log)"
grep -qx 'show partition -o b' scontrol.log || fail "past two partitions: b not asked: $(cat scontrol.log)"
grep -q "heal: not requeueing: excluding 1 more would leave 1 of the partition's 2 nodes (0 excluded already) for a job of 3; the job ends, naming node02" err ||
  fail "past two partitions: $(cat err)"
# A partition whose size scontrol does not give: no exclusion, the job ends saying why.
FAKE_TOTAL=none FAKE_ERR='srun: error: node02: task 1: Bus error\n' heal "an unknown size" srun python t.py
excluded_none "an unknown size"
grep -q "heal: not requeueing: the partition's size is unknown (scontrol show partition \"debug\" gave no TotalNodes), so excluding 1 more could leave the job pending for ever; the job ends, naming node02" err ||
  fail "an unknown size: $(cat err)"
grep -q '^requeue' scontrol.log && fail "an unknown size: requeued"
# --heal-defer: the requeue waits in the record; --heal-requeue carries it out once, and not a
# requeue an earlier run kept.
FAKE_ERR='srun: error: node02: task 1: Bus error\n' timeout 20 "$watch" --timeout 30s --heal rec \
  --heal-defer -- srun python t.py >out 2>err || true
grep -q '^requeue' scontrol.log && fail "deferred: requeued at once: $(cat scontrol.log)"
grep -qx 'ddp-watch: heal: the requeue waits for the end of the job script (ddp-watch --heal-requeue)' err ||
  fail "deferred: $(cat err)"
grep -qx $'requeue\tnode02' rec || fail "deferred: record $(cat rec)"
: >scontrol.log
"$watch" --heal-requeue rec || fail "--heal-requeue: status $?"
grep -qx 'requeue 42' scontrol.log || fail "--heal-requeue: $(cat scontrol.log)"
grep -qx 'update JobId=42 ExcNodeList=node02' scontrol.log || fail "--heal-requeue: $(cat scontrol.log)"
: >scontrol.log
"$watch" --heal-requeue rec || fail "--heal-requeue again: status $?"
[[ ! -s scontrol.log ]] || fail "--heal-requeue again: $(cat scontrol.log)"
printf 'job\t42\t0\nunblamed\t0\nrequeue\tnode03\n' >rec
SLURM_RESTART_COUNT=1 "$watch" --heal-requeue rec || fail "--heal-requeue of run 0: status $?"
[[ ! -s scontrol.log ]] || fail "--heal-requeue of run 0 in run 1: $(cat scontrol.log)"
rm -f rec
cases=$((cases + 1))

# The preflight's run tag: rank 0's line of an earlier run (another tag, or none: an old log
# echoed by a setup command) names no one; the line that ends with this run's tag does.
FAKE_OUT='0: ddp-check: suspect node02: slow: x\n' heal "an untagged suspect line" srun ddp-check
excluded_none "an untagged suspect line"
FAKE_OUT='0: ddp-check: suspect node02: slow: x [run 0123456789abcdef]\n' \
  heal "another run's suspect line" srun ddp-check
excluded_none "another run's suspect line"
FAKE_OUT='0: ddp-check: unauthenticated, not acted on: suspect node02: slow: x [run @TAG@]\n' \
  heal "an unauthenticated suspect line" srun ddp-check
excluded_none "an unauthenticated suspect line"
rm -f rec
FAKE_OUT='0: ddp-check: suspect node02: slow: x [run @TAG@]\n' heal "this run's suspect line" srun ddp-check
grep -qx 'update JobId=42 ExcNodeList=node02' scontrol.log ||
  fail "this run's suspect line: $(cat err) $(cat scontrol.log)"
rm -f rec rec.*
echo "local hostile: $cases cases passed, ${#skipped[@]} skipped${skipped:+ (${skipped[*]})}"
