"""Rendezvous probe for tests/bench/compare_seed.sh: joins the process group from the env://
variables (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), then prints the wall-clock time at
which this rank got past init_process_group, as `past_init RANK WORLD NS`. All hosts of the
embedded cluster share one clock, so the bench script can compare it with the time of sbatch.
"""
import os
import time

import torch.distributed as dist

dist.init_process_group("gloo")
now = time.time_ns()
print(f"past_init {dist.get_rank()} {dist.get_world_size()} {now} "
      f"master={os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}", flush=True)
dist.barrier()
dist.destroy_process_group()
