"""Rendezvous probe for tests/bench/compare_handwritten.sh (a benchmark's payload, not a test):
joins the process group from the env:// variables (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE),
then prints the wall-clock time at which this rank got past init_process_group, as
`past_init RANK WORLD NS`. All hosts of the
embedded cluster share one clock, so the bench script can compare it with the time of sbatch.
A timing is only worth reporting for a correct world: the probe then all-reduces its rank and
exits 1 unless the sum is 0 + 1 + ... + (WORLD_SIZE - 1) and WORLD_SIZE matches the group.
"""
import os
import sys
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
now = time.time_ns()
rank, world = dist.get_rank(), dist.get_world_size()
print(f"past_init {rank} {world} {now} "
      f"master={os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}", flush=True)
total = torch.tensor([float(rank)])
dist.all_reduce(total)
expected = world * (world - 1) / 2
dist.destroy_process_group()
if int(os.environ.get("WORLD_SIZE", "-1")) != world or total.item() != expected:
    print(f"probe_failed rank {rank}: WORLD_SIZE={os.environ.get('WORLD_SIZE')} group {world} "
          f"sum {total.item()} expected {expected}", file=sys.stderr, flush=True)
    sys.exit(1)
