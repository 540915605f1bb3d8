#!/bin/bash
#SBATCH --account=<project_number>
#SBATCH --job-name=resnet_multinode_mod
#SBATCH --output=multinode_module_%j.out
#SBATCH --error=multinode_module_%j.err
#SBATCH --time=01:00:00
#SBATCH --partition=accel
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
#SBATCH --cpus-per-task=72
#SBATCH --mem=440G

set -euo pipefail

SCRIPT_DIR="/cluster/work/projects/<project_number>/<username>/pytorch_olivia"

ml reset
ml load NRIS/GPU
ml load NCCL/2.26.6-GCCcore-14.2.0-CUDA-12.8.0
ml use /cluster/work/support/pytorch_module
ml load PyTorch/2.8.0

export PYTORCH_OVERLAY_MODE=ro

cd "${SCRIPT_DIR}"

mapfile -t nodes < <(scontrol show hostnames "${SLURM_JOB_NODELIST}")
head_node="${nodes[0]}"
export RDZV_ENDPOINT="${head_node}:29500"

echo "Head node: ${head_node}"
echo "Rendezvous endpoint: ${RDZV_ENDPOINT}"

srun torchrun \
  --nnodes="${SLURM_JOB_NUM_NODES}" \
  --nproc_per_node="${SLURM_GPUS_ON_NODE}" \
  --rdzv_id="${SLURM_JOB_ID}" \
  --rdzv_backend=c10d \
  --rdzv_endpoint="${RDZV_ENDPOINT}" \
  train_ddp.py --epochs 100 --batch-size 2048 --base-lr 0.04 --target-accuracy 0.95 --patience 2
