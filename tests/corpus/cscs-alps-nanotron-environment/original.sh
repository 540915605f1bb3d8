#!/bin/bash
#SBATCH --account=<ACCOUNT>
#SBATCH --job-name=pretrain-nanotron      # create a short name for your job
#SBATCH --time=00:45:00
#SBATCH --nodes=2                # total number of nodes
#SBATCH --ntasks-per-node=1      # total number of tasks per node
#SBATCH --gpus-per-task=4
#SBATCH --output=logs/slurm-%x-%j.log  # if #SBATCH --error=... is not specified,
                                 # this will also contain stderr (error messages)

# Initialization.
set -x
cat $0
export HF_HOME=$SCRATCH/huggingface # (1)!
export CUDA_DEVICE_MAX_CONNECTIONS=1 #(2)!

export WANDB_API_KEY=<api key> # alternatively: export WANDB_MODE=offline

# Run main script.
srun -ul --environment=./ngc-nanotron-24.04.toml bash -c "
  # activate virtual environment
  source venv-24.04/bin/activate

  # change cwd and run the training script
  cd nanotron/

  TORCHRUN_ARGS=\"
   --master-addr=\$(scontrol show hostnames \$SLURM_JOB_NODELIST | head -n 1) \
   --master-port=29500 \
   --node-rank=\${SLURM_PROCID} \
   --nnodes=\${SLURM_NNODES} \
   --nproc-per-node=\${SLURM_GPUS_ON_NODE} \
  \"

  python -m torch.distributed.run \${TORCHRUN_ARGS} \
    run_train.py --config-file examples/config_tiny_llama_wikitext.yaml
" # (3)!
