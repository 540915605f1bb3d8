#!/usr/bin/env python3
"""Smallest real DDP rendezvous: every rank joins the process group from the environment that
`srun --ddp` exported, all-reduces its rank, and prints what it sees.

Works in both modes: as a task of `srun --ddp` (tasks mode), or as a worker started by a bare
`torchrun allreduce.py` under `srun --ddp=torchrun` (torchrun sets RANK/LOCAL_RANK for it).
"""
import os
import socket
import sys

import torch
import torch.distributed as dist


def main() -> int:
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    # env:// reads MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE.
    dist.init_process_group(backend=backend, init_method="env://")
    rank = dist.get_rank()
    world = dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", local_rank) if backend == "nccl" else torch.device("cpu")
    value = torch.tensor([float(rank)], device=device)
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    expected = world * (world - 1) / 2
    print(
        f"rank={rank} world={world} local_rank={local_rank} host={socket.gethostname()} "
        f"master={os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']} "
        f"allreduce_sum={value.item():g} expected={expected:g}",
        flush=True,
    )
    dist.barrier()
    dist.destroy_process_group()
    return 0 if value.item() == expected else 1


if __name__ == "__main__":
    sys.exit(main())
