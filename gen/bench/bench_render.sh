#!/bin/bash
# Times one ddpgen render as a whole process (start, load profile and template, decode,
# validate, render, exit) against `python3 -c pass`, the floor of any Python-based generator
# (submitit, torchx). Runs are interleaved so both see the same machine load; prints medians
# and their ratio (target <= 0.25).
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

now_ns() { date +%s%N; }
a=() b=()
cd "$case_dir"
for ((i = 0; i < runs; i++)); do
  t0=$(now_ns)
  "$ddpgen" --profile puhti job.yaml > /dev/null 2>&1
  t1=$(now_ns)
  "$python" -c pass
  t2=$(now_ns)
  a+=($((t1 - t0)))
  b+=($((t2 - t1)))
done

median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
ma=$(median "${a[@]}")
mb=$(median "${b[@]}")
awk -v a="$ma" -v b="$mb" -v n="$runs" 'BEGIN {
  printf "runs:                 %d (interleaved)\n", n
  printf "ddpgen render median: %.2f ms\n", a / 1e6
  printf "python3 -c pass:      %.2f ms\n", b / 1e6
  printf "ratio:                %.3f (target <= 0.25)\n", a / b
}'
