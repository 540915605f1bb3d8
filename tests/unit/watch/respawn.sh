#!/usr/bin/env bash
# ddp-watch --spares outside Slurm, on real processes (about 5 s): srun, scontrol and squeue are
# stand-ins on PATH. The fake srun logs its words; a training step fails as $FAKE_STEPS says
# (one word per step: a node whose rank dies of SIGBUS, or "ok"), the --respawn-check's
# ddp-check exits $FAKE_CHECK, and on every node of the job (--first-check) names the nodes of
# $FAKE_SUSPECTS as rank 0 does. What is checked is the order and the truth of the lines: a
# respawn is said once its step starts, a failed check says so and what follows, and every
# way the job ends closes the heal record with its summary.
# Usage: respawn.sh DDP_WATCH
set -euo pipefail
watch=${1:?usage: respawn.sh DDP_WATCH}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
mkdir bin
cat >bin/srun <<'SH'
#!/bin/bash
echo "srun $*" >>"$FAKE_LOG"
case " $* " in
  *" ddp-check "*)
    # As ddp-check does: a suspect line ends with the run tag ddp-watch gave the step.
    tag=${DDP_CHECK_RUN_TAG:+ [run $DDP_CHECK_RUN_TAG]}
    # The check of every node (--first-check): rank 0 names each of $FAKE_SUSPECTS.
    if [[ " $* " == *" --nodelist=node[01-04] "* && -n ${FAKE_SUSPECTS:-} ]]; then
      for node in $FAKE_SUSPECTS; do
        echo "0: ddp-check: suspect $node: unreachable: no hello from $node in 5 s$tag"
      done
      exit 1
    fi
    # A respawn's check that names $FAKE_CHECK_NAMES, after a second.
    if [[ -n ${FAKE_CHECK_NAMES:-} && " $* " == *" --nodelist=node[01,03-04] "* ]]; then
      sleep 1
      echo "0: ddp-check: suspect $FAKE_CHECK_NAMES: unreachable: no hello in 5 s$tag"
      exit 1
    fi
    exit "${FAKE_CHECK:-0}" ;;
esac
echo "respawn count ${DDP_RESPAWN_COUNT:-none}" >>"$FAKE_LOG"
n=$(cat steps 2>/dev/null || echo 0)
echo $((n + 1)) >steps
read -r -a plan <<<"$FAKE_STEPS"
what=${plan[$n]:-ok}
[[ $what == ok ]] && exit 0
echo "srun: error: $what: task 1: Bus error" >&2
exit 1
SH
cat >bin/scontrol <<'SH'
#!/bin/sh
echo "scontrol $*" >>"$FAKE_LOG"
case "$1 $2" in
  "show partition") echo "PartitionName=$4 TotalNodes=8" ;;
  "show job") echo "JobId=$4 ExcNodeList=(null)" ;;
esac
exit 0
SH
printf '#!/bin/sh\nexit 0\n' >bin/squeue
chmod +x bin/*
export PATH=$work/bin:$PATH FAKE_LOG=$work/log SLURM_JOB_ID=42
export SLURM_JOB_NODELIST='node[01-04]' SLURM_JOB_PARTITION=debug SLURM_RESTART_COUNT=0
unset SLURM_ARRAY_JOB_ID SLURM_ARRAY_TASK_ID SLURM_LABELIO

cases=0
# run NAME ARGS...: ddp-watch --heal rec --spares ${SPARES:-1} ARGS -- srun --ddp python3 t.py, at most
# 20 s (srun $STEP, split at spaces, in place of "--ddp python3 t.py" when set); its stderr is
# in err, the fake programs' calls in log.
run() {
  local name=$1 step=(--ddp python3 t.py)
  shift
  [[ -z ${STEP:-} ]] || read -r -a step <<<"$STEP"
  rm -f steps log
  : >log
  status=0
  timeout 20 "$watch" --timeout 30s --heal rec --spares "${SPARES:-1}" "$@" -- srun "${step[@]}" \
    >out 2>err || status=$?
  ((status != 124)) || fail "$name: ddp-watch blocked for 20 s: $(cat err)"
  cases=$((cases + 1))
}
# lines: ddp-watch's own lines of err.
lines() { grep -E '^ddp-watch: (respawn|heal): ' err; }

# A respawn without a check: its line, then the end of the job.
FAKE_STEPS='node02 ok' run "a respawn"
((status == 0)) || fail "a respawn: status $status: $(cat err)"
grep -qE '^ddp-watch: respawn: respawn 1 of at most 1: node02 \(hardware-signal\): .*; node\[01-03\] -> node\[01,03-04\]; the new step started [0-9.]+ s after the failed one.s srun exited$' err ||
  fail "a respawn: $(cat err)"
grep -qE '^ddp-watch: respawn: respawns: 1: node02 \(hardware-signal\) node\[01-03\] -> node\[01,03-04\] started after [0-9.]+ s$' err ||
  fail "a respawn: summary: $(cat err)"
grep -q 'ddp-check' log && fail "a respawn: a check without --respawn-check: $(cat log)"
[[ $(grep '^respawn count' log) == $'respawn count none\nrespawn count 1' ]] ||
  fail "a respawn: DDP_RESPAWN_COUNT: $(cat log)"

# The check of the new nodes passes: the respawn is said after it, before the new step.
FAKE_STEPS='node02 ok' FAKE_CHECK=0 run "a checked respawn" --respawn-check "ddp-check --timeout=5"
((status == 0)) || fail "a checked respawn: status $status: $(cat err)"
grep -qE 'respawn 1 of at most 1: .*; the new step started [0-9.]+ s after the failed one.s srun exited, its nodes checked in between$' err ||
  fail "a checked respawn: $(cat err)"
grep -q 'nodelist=node\[01,03-04\] .*ddp-check' log || fail "a checked respawn: no check: $(cat log)"

# The check fails naming no node: no step starts on those nodes, the line says so and that the
# heal path takes over, and the summary does not claim the job moved there.
FAKE_STEPS='node02 ok' FAKE_CHECK=1 run "a failed check" --respawn-check "ddp-check --timeout=5"
((status != 0)) || fail "a failed check: status 0: $(cat err)"
grep -q 'the new step started' err && fail "a failed check: said started: $(cat err)"
grep -qE '^ddp-watch: respawn: respawn 1 of at most 1: node02 \(hardware-signal\): .*; node\[01-03\] -> node\[01,03-04\]: the check of node\[01,03-04\] failed, no step started there; not respawning: no node of the step was named; the heal path takes over$' err ||
  fail "a failed check: $(cat err)"
grep -qE '^ddp-watch: respawn: respawns: 1: node02 \(hardware-signal\) node\[01-03\] -> node\[01,03-04\] check failed, not started$' err ||
  fail "a failed check: summary: $(cat err)"
(($(grep -c 'python3 t.py' log) == 1)) || fail "a failed check: a step started there: $(cat log)"

# The check names a spare: the respawn's line says so, another respawn follows, and its time
# still counts from the failed step's srun exit, the failed check's second included.
rm -f rec
SLURM_JOB_NODELIST='node[01-05]' SPARES=2 FAKE_STEPS='node02 ok' FAKE_CHECK_NAMES=node04 \
  run "a check that names a spare" --respawn-check "ddp-check --timeout=5"
((status == 0)) || fail "a check that names a spare: status $status: $(cat err)"
grep -qE '^ddp-watch: respawn: respawn 1 of at most 2: .*; node\[01-03\] -> node\[01,03-04\]: the check of node\[01,03-04\] failed, no step started there; respawning again$' err ||
  fail "a check that names a spare: $(cat err)"
seconds=$(sed -nE "s/^ddp-watch: respawn: respawn 2 of at most 2: node04 \(unreachable\): no hello in 5 s; node\[01,03-04\] -> node\[01,03,05\]; the new step started ([0-9]+)\.[0-9]+ s after the failed one's srun exited, its nodes checked in between$/\1/p" err)
[[ -n $seconds ]] || fail "a check that names a spare: no second respawn: $(cat err)"
((seconds >= 1)) || fail "a check that names a spare: the time left out the failed check: $(cat err)"

# The fault follows the job to the spare: the job ends with the heal path's closing line, which
# names what an earlier run excluded, and the record of this job is removed, as every other end
# of the job does.
printf 'job\t42\t0\nunblamed\t0\nexcluded\t0\tnode05\tunreachable\t\tno answer\n' >rec
chmod 600 rec
export SLURM_RESTART_COUNT=1
FAKE_STEPS='node02 node04' run "the fault follows the job"
((status != 0)) || fail "the fault follows the job: status 0: $(cat err)"
grep -q 'the fault follows the job: hardware-signal on node04 as on node02 before the respawn' err ||
  fail "the fault follows the job: $(cat err)"
grep -qx 'ddp-watch: heal: excluded across runs: node05 (run 0, unreachable)' err ||
  fail "the fault follows the job: no closing line: $(cat err)"
[[ ! -e rec ]] || fail "the fault follows the job: the record of an ended job is left"
grep -q '^scontrol requeue' log && fail "the fault follows the job: requeued: $(cat log)"
# Its last lines, in order: the heal path's, then the respawns'.
[[ $(lines | tail -n 2 | head -n 1) == 'ddp-watch: heal: excluded across runs: node05 (run 0, unreachable)' ]] ||
  fail "the fault follows the job: order: $(cat err)"
export SLURM_RESTART_COUNT=0

# --first-check: the check of every node names node02 before the first step, which avoids it
# (a respawn, said with the check's evidence once the chosen nodes passed their own check):
# no requeue, no exclusion, and the program's first start is not told it is a respawn.
FAKE_STEPS='ok' FAKE_SUSPECTS='node02' run "the first check names a node" \
  --respawn-check "ddp-check --timeout=5" --first-check
((status == 0)) || fail "the first check names a node: status $status: $(cat err)"
grep -qE '^ddp-watch: respawn: respawn 1 of at most 1 before the first step: node02 \(unreachable\): no hello from node02 in 5 s; node\[01-03\] -> node\[01,03-04\]; the first step started [0-9.]+ s after the check of every node ended, its nodes checked in between$' err ||
  fail "the first check names a node: $(cat err)"
grep -qE '^ddp-watch: respawn: respawns: 1 \(before the first step\): node02 \(unreachable\) node\[01-03\] -> node\[01,03-04\] started after [0-9.]+ s$' err ||
  fail "the first check names a node: summary: $(cat err)"
[[ $(grep -c -- '--nodelist=node\[01,03-04\] --ddp python3 t.py' log) == 1 ]] ||
  fail "the first check names a node: the step's nodes: $(cat log)"
grep -q -- '--nodelist=node\[01,03-04\] .*ddp-check' log ||
  fail "the first check names a node: the chosen nodes not checked: $(cat log)"
grep -q '^scontrol requeue' log && fail "the first check names a node: requeued: $(cat log)"
grep -qx 'respawn count none' log || fail "the first check names a node: $(cat log)"
# --check-tasks-per-node: every check has the preflight's tasks per node (2 on each of the job's
# 4 nodes, then on the 3 chosen), not one.
FAKE_STEPS='ok' FAKE_SUSPECTS='node02' run "the checks' tasks per node" \
  --respawn-check "ddp-check --timeout=5" --first-check --check-tasks-per-node 2
((status == 0)) || fail "the checks' tasks per node: status $status: $(cat err)"
grep -q -- '--nodelist=node\[01-04\] --nodes=4 --ntasks=8 --ntasks-per-node=2 .*ddp-check' log ||
  fail "the checks' tasks per node: the check of every node: $(cat log)"
grep -q -- '--nodelist=node\[01,03-04\] --nodes=3 --ntasks=6 --ntasks-per-node=2 .*ddp-check' log ||
  fail "the checks' tasks per node: the check of the chosen nodes: $(cat log)"
# Without the plugin (--check-wrapper): every check runs under the first words of the step's
# program, after srun's own layout options (the step's -N 3 not among them), never with --ddp.
k_wrapper='bash -c true ddpgen-task tasks 2 20000 11000'
STEP="-N 3 $k_wrapper python3 t.py" FAKE_STEPS='node02 ok' run "checks under the step's wrapper" \
  --respawn-check "ddp-check --timeout=5" --first-check --check-wrapper 8
((status == 0)) || fail "checks under the step's wrapper: status $status: $(cat err)"
grep -qx "srun --nodelist=node\[01-04\] --nodes=4 --ntasks=4 --ntasks-per-node=1 --kill-on-bad-exit=1 $k_wrapper ddp-check --timeout=5" log ||
  fail "checks under the step's wrapper: the check of every node: $(cat log)"
grep -qx "srun --nodelist=node\[01,03-04\] --nodes=3 --ntasks=3 --ntasks-per-node=1 --kill-on-bad-exit=1 $k_wrapper ddp-check --timeout=5" log ||
  fail "checks under the step's wrapper: the check of the new step's nodes: $(cat log)"
grep -qx "srun --nodelist=node\[01,03-04\] -N 3 $k_wrapper python3 t.py" log ||
  fail "checks under the step's wrapper: the new step: $(cat log)"
grep -q -- '--ddp' log && fail "checks under the step's wrapper: --ddp: $(cat log)"
grep -qE 'respawn 1 of at most 1: node02 .*, its nodes checked in between$' err ||
  fail "checks under the step's wrapper: $(cat err)"
# More nodes named than spares: the heal path excludes them and requeues, as after a preflight,
# and no step starts.
FAKE_STEPS='ok' FAKE_SUSPECTS='node02 node03' run "the first check names too many" \
  --respawn-check "ddp-check --timeout=5" --first-check
grep -qx "ddp-watch: respawn: not avoiding the named nodes before the first step: the check named 2 nodes, more than the 1 spare(s); the heal path takes over" err ||
  fail "the first check names too many: $(cat err)"
grep -qx 'scontrol update JobId=42 ExcNodeList=node02,node03' log ||
  fail "the first check names too many: not excluded: $(cat log)"
grep -q 'python3 t.py' log && fail "the first check names too many: a step started: $(cat log)"
rm -f rec

echo "local respawn: $cases cases passed"
