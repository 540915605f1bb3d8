#!/usr/bin/env bash
# The main job, from nothing: installs the Debian packages, builds slurm-ddp, starts the
# embedded 3-node Slurm cluster with the freshly built plugin, and runs a real PyTorch DDP job
# across it with `srun --ddp`, printing every rank's all-reduce result. Then the main job:
# ddpgen renders contrib/examples/autoencoder-srun.yaml, sbatch submits it, and the
# autoencoder trains on 3 nodes x 2 ranks with checkpoints; its log is printed as it runs.
# Root on Debian 12; a few minutes on 2 cores (most of it the build).
# The cluster keeps running afterwards; stop it with: tests/cluster/cluster.sh down
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cluster="$root/tests/cluster/cluster.sh"

if [[ "${DDP_SKIP_DEPS:-0}" != 1 ]]; then
  bash "$root/contrib/install-deps.sh"
fi

echo "== build: the plugin and ddpgen (the tests build with tests/run.sh)"
# Only the two programs this walk-through runs: the test programs, fuzz targets and the other
# tools would more than double the build. The same build tree serves tests/run.sh later.
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j"$(nproc)" --target spank_ddp ddpgen

echo "== start the embedded cluster (slurmctld + 3 slurmd + munge in network namespaces)"
"$cluster" up --plugin "$root/build/spank/spank_ddp.so"
"$cluster" run sinfo

echo "== srun -N3 --ntasks-per-node=2 --ddp python3 allreduce.py"
"$cluster" run srun -N3 --ntasks-per-node=2 --ddp \
  /usr/bin/python3 "$root/contrib/examples/allreduce.py" | sort

echo "== the environment --ddp gave rank 3"
# shellcheck disable=SC2016  # expanded in each task
"$cluster" run srun -N3 --ntasks-per-node=2 --ddp bash -c \
  'if [ "$RANK" = 3 ]; then env | grep -E "^(MASTER_|WORLD_SIZE|RANK|LOCAL_|NODE_RANK|GROUP_RANK|NNODES)" | sort; fi'

# The training example through the whole path: job file -> ddpgen -> sbatch -> srun --ddp.
examples=$root/contrib/examples
# A fresh directory for each run (so it trains from scratch), under /tmp: every node sees it.
work=$(mktemp -d /tmp/slurm-ddp-quickstart.XXXXXX)
echo "== ddpgen --profile local autoencoder-srun.yaml (checkpoints and log in $work)"
"$root/build/gen/ddpgen" --profile local "$examples/autoencoder-srun.yaml" \
  -o "$work/autoencoder-srun.slurm" --set "script=$examples/autoencoder.py" \
  --set "checkpoint.dir=$work/checkpoints" --set "output=$work/autoencoder-srun-%j.out"
grep -E '^(#SBATCH|srun|  python3)' "$work/autoencoder-srun.slurm"

echo "== sbatch: the autoencoder, DDP on 3 nodes x 2 ranks, one checkpoint per epoch"
# The job runs Debian's python3 (python3-torch); a python3 earlier on this shell's PATH (pyenv,
# a virtualenv) would be another interpreter, without torch.
job=$(cd "$work" && "$cluster" run env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  sbatch --parsable autoencoder-srun.slurm)
log=$work/autoencoder-srun-$job.out
echo "job $job; its log:"
touch "$log"
tail -n +1 -F "$log" 2>/dev/null &
tail_pid=$!
state=""
for ((waited = 0; waited < 300; waited++)); do
  state=$("$cluster" run scontrol show job -o "$job" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
  case $state in PENDING | CONFIGURING | RUNNING | COMPLETING | REQUEUED | "") sleep 1 ;; *) break ;; esac
done
sleep 1  # let tail print the last lines
kill "$tail_pid"
wait "$tail_pid" 2>/dev/null || true
if [[ $state != COMPLETED ]] || ! grep -q '^weights identical on 6 ranks$' "$log"; then
  echo "quickstart: error: job $job ended ${state:-in an unknown state}, not trained; log: $log" >&2
  exit 1
fi
echo "== trained: job $job COMPLETED; model and optimizer state in $work/checkpoints/autoencoder.pt"
