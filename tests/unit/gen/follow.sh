#!/usr/bin/env bash
# ddpgen logs --follow and status against stand-ins for scontrol and sacct: what a real cluster
# cannot show on demand in a short test. A job requeued with a node excluded, that then leaves
# scontrol on a cluster without accounting (its final state unknown, said so, exit 1); one that
# leaves scontrol and is finished through sacct (exit 0); a job nobody knows; a bad job id
# (exit 2); a large output attached to, and one truncated by a requeue; a sweep task's output
# continued in the file its values name. Each stand-in answers from a numbered file per call.
# About 20 s (a look every 2 s).
#   follow.sh DDPGEN
set -uo pipefail
ddpgen=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0

fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# The stand-ins: call N of scontrol prints looks/N (or the last one there is) and runs
# looks/N.sh first when there is one (it writes the job's output); a file that says GONE is a
# job scontrol no longer knows. sacct prints sacct.txt, or fails as without accounting.
mkdir -p "$work/bin"
cat >"$work/bin/scontrol" <<'SH'
#!/bin/sh
dir=$DDP_FAKE
n=$(($(cat "$dir/calls" 2>/dev/null || echo 0) + 1))
echo "$n" >"$dir/calls"
[ -x "$dir/looks/$n.sh" ] && "$dir/looks/$n.sh"
file=$dir/looks/$n
[ -f "$file" ] || file=$dir/looks/$(ls "$dir/looks" | grep -x '[0-9]*' | sort -n | tail -n 1)
if [ "$(cat "$file")" = GONE ]; then
  echo "slurm_load_jobs error: Invalid job id specified" >&2
  exit 1
fi
cat "$file"
SH
cat >"$work/bin/sacct" <<'SH'
#!/bin/sh
if [ -f "$DDP_FAKE/sacct.txt" ]; then cat "$DDP_FAKE/sacct.txt"; exit 0; fi
echo "Slurm accounting storage is disabled"
exit 1
SH
chmod +x "$work/bin/scontrol" "$work/bin/sacct"

# scenario NAME: a fresh directory of looks for the stand-ins, $fake.
scenario() {
  fake=$work/$1
  mkdir -p "$fake/looks"
}

# record ID STATE REASON NODES RESTARTS EXCLUDED: a `scontrol show job --oneliner` line.
record() {
  echo "JobId=$1 JobName=train JobState=$2 Reason=$3 Requeue=1 Restarts=$5 ExitCode=0:0" \
    "RunTime=00:00:0$5 ExcNodeList=$6 NodeList=$4 StdErr=$fake/out StdOut=$fake/out"
}

# follow ARGS...: ddpgen with the stand-ins first on PATH; sets out, err, status.
follow() {
  out=$(DDP_FAKE=$fake PATH="$work/bin:$PATH" "$ddpgen" "$@" 2>"$fake/err")
  status=$?
  err=$(cat "$fake/err")
  echo "--- ddpgen $* (exit $status)"
  head -n 20 <<<"$out"
  (($(wc -l <<<"$out") <= 20)) || echo "[... $(wc -l <<<"$out") lines]"
  [[ -z $err ]] || echo "stderr: $err"
}

expect_eq() {
  [[ $2 == "$3" ]] || fail "$1: want $(printf %q "$2"), got $(printf %q "$3")"
}

# 1. Waits, runs, is requeued without node03 (heal's line in its output), runs again, and leaves
# scontrol on a cluster without accounting.
scenario requeued
record 5 PENDING Priority "(null)" 0 "(null)" >"$fake/looks/1"
record 5 RUNNING None "node[01-03]" 0 "(null)" >"$fake/looks/2"
printf '#!/bin/sh\necho "epoch 1" >>"%s/out"\n' "$fake" >"$fake/looks/2.sh"
record 5 PENDING BeginTime "(null)" 1 node03 >"$fake/looks/3"
printf '#!/bin/sh\necho "ddp-watch: heal: excluding node03 (unreachable)" >>"%s/out"\n' "$fake" \
  >"$fake/looks/3.sh"
record 5 RUNNING None "node[01-02]" 1 node03 >"$fake/looks/4"
echo GONE >"$fake/looks/5"
chmod +x "$fake"/looks/*.sh
follow logs 5 --follow
expect_eq "requeued: exit" 1 "$status"
expect_eq "requeued: stream" "ddpgen: job 5: PENDING (Priority)
ddpgen: job 5: RUNNING on node[01-03]
epoch 1
ddpgen: job 5: requeued (restart 1)
ddpgen: job 5: PENDING (BeginTime)
ddpgen: job 5: excludes node03
ddp-watch: heal: excluding node03 (unreachable)
ddpgen: job 5: RUNNING on node[01-02]
ddpgen: job 5: left Slurm's memory and sacct cannot say how it ended (no accounting on this cluster?): final state unknown; last seen RUNNING after 00:00:01; last verdict: ddp-watch: heal: excluding node03 (unreachable)" "$out"
# Gently: one look per 2 s, none more.
expect_eq "requeued: looks" 5 "$(cat "$fake/calls")"

# 2. Runs, then leaves scontrol; sacct has its end.
scenario accounted
record 6 RUNNING None node01 0 "(null)" >"$fake/looks/1"
echo GONE >"$fake/looks/2"
echo "6|train|COMPLETED|0:0|00:00:03|node01" >"$fake/sacct.txt"
follow logs 6 -f
expect_eq "accounted: exit" 0 "$status"
expect_eq "accounted: last line" \
  "ddpgen: job 6: COMPLETED on node01, after 00:00:03, exit code 0:0 (from sacct)" \
  "$(tail -n 1 <<<"$out")"
# status of a job only sacct knows: what it cannot say is said to be unknown.
rm -f "$fake/calls"
echo GONE >"$fake/looks/1"
follow status 6
expect_eq "accounted: status" "job 6: COMPLETED on node01 (from sacct)
  name      train
  state     COMPLETED
  reason    -
  nodes     node01
  elapsed   00:00:03
  exit      0:0
  restarts  unknown (sacct)
  excluded  unknown (sacct)
  output    unknown (sacct does not say)
  verdict   unknown" "$out"

# 3. An output larger than a MiB, attached to after the end: its last MiB from a whole line,
# said so; then a requeued run that truncated its output file starts it again.
scenario large
seq 1 400000 | sed 's/^/line /' >"$fake/out"
record 8 COMPLETED None node01 0 "(null)" >"$fake/looks/1"
follow logs 8 --follow
expect_eq "large: exit" 0 "$status"
expect_eq "large: note" "ddpgen: job 8: the first 3640319 bytes of $fake/out are not shown (ddpgen logs prints them all)" \
  "$(head -n 1 <<<"$out")"
expect_eq "large: first line" "line 312620" "$(sed -n 2p <<<"$out")"
expect_eq "large: last lines" "line 400000
ddpgen: job 8: COMPLETED on node01, after 00:00:00, exit code 0:0" "$(tail -n 2 <<<"$out")"
scenario truncated
printf 'run 0 line 1\nrun 0 line 2\n' >"$fake/out"
record 9 RUNNING None node01 0 "(null)" >"$fake/looks/1"
printf '#!/bin/sh\nprintf "run 1\\n" >"%s/out"\n' "$fake" >"$fake/looks/2.sh"
chmod +x "$fake/looks/2.sh"
record 9 COMPLETED None node01 1 "(null)" >"$fake/looks/2"
follow logs 9 --follow
expect_eq "truncated: stream" "ddpgen: job 9: RUNNING on node01
run 0 line 1
run 0 line 2
ddpgen: job 9: requeued (restart 1)
ddpgen: job 9: $fake/out began again (the job runs again; Slurm truncated its output)
run 1
ddpgen: job 9: COMPLETED on node01, after 00:00:01, exit code 0:0" "$out"

# 4. A sweep's task whose output file is named by the sweep's values: sbatch's file says where
# the output continues, and the follower reads on there without showing the first file again.
# A "continues in" line further down (a program's) is not followed.
scenario sweep
record 10_1 RUNNING None node01 0 "(null)" >"$fake/looks/1"
printf '#!/bin/sh
echo "ddpgen: output continues in %s/lr0.1/out" >>"%s/out"
mkdir -p "%s/lr0.1"
echo "epoch 1" >>"%s/lr0.1/out"
' \
  "$fake" "$fake" "$fake" "$fake" >"$fake/looks/1.sh"
record 10_1 RUNNING None node01 0 "(null)" >"$fake/looks/2"
printf '#!/bin/sh
echo "epoch 2" >>"%s/lr0.1/out"
' "$fake" >"$fake/looks/2.sh"
record 10_1 COMPLETED None node01 0 "(null)" >"$fake/looks/3"
chmod +x "$fake"/looks/*.sh
follow logs 10_1 --follow
expect_eq "sweep: exit" 0 "$status"
expect_eq "sweep: stream" "ddpgen: job 10_1: RUNNING on node01
ddpgen: output continues in $fake/lr0.1/out
epoch 1
epoch 2
ddpgen: job 10_1: COMPLETED on node01, after 00:00:00, exit code 0:0" "$out"
rm -f "$fake/calls" "$fake"/looks/*.sh
follow logs 10_1
expect_eq "sweep: logs" "ddpgen: output continues in $fake/lr0.1/out
epoch 1
epoch 2" "$out"
# Only sbatch's file's first lines count: a line the program printed later is text.
for i in $(seq 1 40); do echo "line $i"; done >"$fake/out2"
echo "ddpgen: output continues in /etc/passwd" >>"$fake/out2"
record 11 COMPLETED None node01 0 "(null)" | sed "s|$fake/out|$fake/out2|g" >"$fake/looks/1"
rm -f "$fake/calls" "$fake"/looks/[23]
follow logs 11
expect_eq "sweep: late line" 41 "$(wc -l <<<"$out")"

# 5. A job nobody knows.
scenario unknown
echo GONE >"$fake/looks/1"
follow logs 7 --follow
expect_eq "unknown: exit" 1 "$status"
expect_eq "unknown: error" "ddpgen: error: job 7 is not known to scontrol and sacct cannot say: sacct: Slurm accounting storage is disabled" "$err"

# 6. Not a job id: a usage error, and no Slurm client asked.
scenario bad-id
follow logs '7;scancel'
expect_eq "bad id: exit" 2 "$status"
[[ $err == 'ddpgen: error: job id "7;scancel": expected the number sbatch printed'* ]] ||
  fail "bad id: error: $err"
[[ ! -f $fake/calls ]] || fail "bad id: scontrol was run"

((fails == 0)) || { echo "$fails follow check(s) failed"; exit 1; }
echo "logs --follow and status against stand-ins: all checks passed"
