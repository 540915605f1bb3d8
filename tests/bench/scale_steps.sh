#!/usr/bin/env bash
# The steps bench_scale.sh times inside one allocation of N whole nodes (salloc -N N, on the
# embedded cluster's login host), so that scheduling, which varies by seconds, is not part of
# what is compared. Every step is --overlap: the next one need not wait until slurmctld has
# released the last one's CPUs ("step creation temporarily disabled"), a wait that would
# otherwise land in whichever kind runs second. Prints one result per line, "KEY VALUE...":
#   srun TPN plain|ddp NS     one `srun -N N --ntasks-per-node=TPN [--ddp] true`, interleaved
#   check RPN WALL_S OK_S     one `srun --ddp ddp-check` with RPN ranks per node: srun's wall
#                             time and the rendezvous time ddp-check reports ("OK: ... in X s")
#   fault LONGEST_LINE        the longest line of a ddp-check whose ranks all claim NODE_RANK 0
#   fault_line TEXT           that line
#   allreduce WALL_S RANKS_OK a gloo all-reduce of N ranks (contrib/examples/allreduce.py)
#
#   scale_steps.sh NODES PAIRS CHECK_RUNS DDP_CHECK ALLREDUCE_PY|-
set -uo pipefail
nodes=$1 pairs=$2 check_runs=$3 check_bin=$4 allreduce_py=$5

now() { date +%s%N; }

# PAIRS pairs per layout, the order alternating so that neither kind always runs first.
for ((i = 0; i < pairs; i++)); do
  for tpn in 1 8; do
    if ((i % 2 == 0)); then kinds=(plain ddp); else kinds=(ddp plain); fi
    for kind in "${kinds[@]}"; do
      flag=()
      [[ $kind == ddp ]] && flag=(--ddp)
      t0=$(now)
      srun --overlap -N "$nodes" --ntasks-per-node="$tpn" "${flag[@]}" true || { echo "error srun $tpn $kind"; continue; }
      echo "srun $tpn $kind $(($(now) - t0))"
    done
  done
done

for ((i = 0; i < check_runs; i++)); do
  for rpn in 1 4; do
    t0=$(now)
    out=$(srun --overlap -N "$nodes" --ntasks-per-node="$rpn" --ddp "$check_bin" --timeout 60 2>&1)
    t1=$(now)
    ok=$(sed -nE 's/^ddp-check: OK: .* in ([0-9.]+) s$/\1/p' <<<"$out")
    if [[ -z $ok ]]; then echo "error check $rpn: $(tail -n 3 <<<"$out" | tr '\n' ' ')"; continue; fi
    echo "check $rpn $(awk -v d=$((t1 - t0)) 'BEGIN { printf "%.3f", d / 1e9 }') $ok"
  done
done

# Every rank claims NODE_RANK 0: the faults name all N hosts at once, the worst case for length.
out=$(srun --overlap -N "$nodes" --ntasks-per-node=1 --ddp bash -c \
  "export NODE_RANK=0 GROUP_RANK=0; exec $check_bin --timeout 60" 2>&1)
line=$(grep -E '^ddp-check: (FAULT|rank [0-9]+ .*FAILED)' <<<"$out" | awk '{ print length($0) " " $0 }' |
  sort -rn | head -n 1)
echo "fault ${line%% *}"
echo "fault_line ${line#* }"

if [[ $allreduce_py != - ]]; then
  t0=$(now)
  out=$(OMP_NUM_THREADS=1 srun --overlap -N "$nodes" --ntasks-per-node=1 --ddp /usr/bin/python3 "$allreduce_py" 2>&1)
  t1=$(now)
  sum=$((nodes * (nodes - 1) / 2))
  good=$(grep -cE "^rank=[0-9]+ world=$nodes .* allreduce_sum=$sum expected=$sum$" <<<"$out")
  echo "allreduce $(awk -v d=$((t1 - t0)) 'BEGIN { printf "%.3f", d / 1e9 }') $good"
fi
