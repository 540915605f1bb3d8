#!/bin/bash
# Times one ddpgen render as a whole process (start, load profile and template, decode,
# validate, render, exit) against `python3 -c pass`, the floor of any Python-based generator
# (submitit, torchx), and against /bin/true, the cost of starting any process at all on this
# machine. The three are interleaved so all see the same load; prints medians and the ratio
# ddpgen / python3, and the same ratio above the /bin/true floor.
# Timestamps come from bash's $EPOCHREALTIME, so no timing process is forked inside a sample.
# Python is Debian's /usr/bin/python3 itself: a python3 found on PATH may be a wrapper script
# (pyenv's shim), slower than Python and so flattering to the ratio.
# Usage: gen/bench/bench_render.sh [DDPGEN] [RUNS]   (default: build/gen/ddpgen, 200)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ddpgen=${1:-$root/build/gen/ddpgen}
python=${DDP_BENCH_PYTHON:-/usr/bin/python3}
runs=${2:-200}
case_dir=$root/tests/golden/puhti-torchrun
[[ -x $ddpgen ]] || { echo "no ddpgen at $ddpgen (build it, or pass its path)" >&2; exit 2; }
ddpgen=$(realpath "$ddpgen")   # the loop runs in the case directory
[[ -x $python ]] || { echo "no Python at $python (set DDP_BENCH_PYTHON)" >&2; exit 2; }
cd "$case_dir"
"$ddpgen" --profile puhti job.yaml >/dev/null 2>&1 || { echo "ddpgen fails on $case_dir" >&2; exit 1; }

a=() b=() c=()
for ((i = 0; i < runs; i++)); do
  t0=${EPOCHREALTIME/[.,]/}
  "$ddpgen" --profile puhti job.yaml >/dev/null 2>&1
  t1=${EPOCHREALTIME/[.,]/}
  "$python" -c pass
  t2=${EPOCHREALTIME/[.,]/}
  /bin/true
  t3=${EPOCHREALTIME/[.,]/}
  a+=($((10#$t1 - 10#$t0)))
  b+=($((10#$t2 - 10#$t1)))
  c+=($((10#$t3 - 10#$t2)))
done

median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ma=$(median "${a[@]}")
mb=$(median "${b[@]}")
mc=$(median "${c[@]}")
awk -v a="$ma" -v b="$mb" -v c="$mc" -v n="$runs" 'BEGIN {
  printf "runs:                 %d (interleaved)\n", n
  printf "ddpgen render median: %.2f ms\n", a / 1e3
  printf "python3 -c pass:      %.2f ms\n", b / 1e3
  printf "/bin/true:            %.2f ms (starting any process here)\n", c / 1e3
  printf "ratio:                %.3f\n", a / b
  printf "ratio above /bin/true: %.3f\n", (a - c) / (b - c)
}'
