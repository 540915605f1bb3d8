#!/usr/bin/env bash
# The main job, from nothing: installs the Debian packages, builds slurm-ddp, starts the
# embedded 3-node Slurm cluster with the freshly built plugin, and runs a real PyTorch DDP job
# across it with `srun --ddp`, printing every rank's all-reduce result. Root on Debian 12.
# The cluster keeps running afterwards; stop it with: tests/cluster/cluster.sh down
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cluster="$root/tests/cluster/cluster.sh"

if [[ "${DDP_SKIP_DEPS:-0}" != 1 ]]; then
  bash "$root/contrib/install-deps.sh"
fi

echo "== build"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j"$(nproc)"

echo "== start the embedded cluster (slurmctld + 3 slurmd + munge in network namespaces)"
"$cluster" up --plugin "$root/build/spank/spank_ddp.so"
"$cluster" run sinfo

echo "== srun -N3 --ntasks-per-node=2 --ddp python3 allreduce.py"
"$cluster" run srun -N3 --ntasks-per-node=2 --ddp \
  /usr/bin/python3 "$root/contrib/examples/allreduce.py" | sort

echo "== the environment --ddp gave rank 3"
"$cluster" run srun -N3 --ntasks-per-node=2 --ddp bash -c \
  '[ "$RANK" = 3 ] && env | grep -E "^(MASTER_|WORLD_SIZE|RANK|LOCAL_|NODE_RANK|GROUP_RANK|NNODES)" | sort'
