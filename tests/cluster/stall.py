#!/usr/bin/env python3
"""A small DDP training loop (gloo, CPU) whose chosen rank hangs or dies mid-epoch, for the
watchdog's cluster tests and benchmark.

Every rank runs --steps steps: load a batch, forward, backward (DDP all-reduces the
gradients), then an all_reduce of the loss. Rank 0 prints "step N time T" after each, T being
the wall clock (s since the epoch), so a test can tell when progress stopped.
  --hang-rank R   at --at-step, rank R blocks forever in load_batch; the others go on into
                  the gradient all-reduce and wait there
  --hang-node N   at --at-step, every rank on Slurm node N (SLURMD_NODENAME) blocks likewise
  --die-rank R    at --at-step, rank R kills itself with SIGKILL
With $DDP_HEARTBEAT_FILE set, rank 0 touches that file at most once a second.
"""
import argparse
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--step-sleep", type=float, default=0.05, help="seconds per step, besides work")
    p.add_argument("--hang-rank", type=int, default=-1)
    p.add_argument("--hang-node", default="")
    p.add_argument("--die-rank", type=int, default=-1)
    p.add_argument("--at-step", type=int, default=5)
    return p.parse_args(argv)


class Heartbeat:
    """Touches $DDP_HEARTBEAT_FILE (when set) at most once a second."""

    def __init__(self):
        self.path = os.environ.get("DDP_HEARTBEAT_FILE", "")
        self.last = 0.0

    def beat(self):
        now = time.monotonic()
        if self.path and now - self.last >= 1.0:
            with open(self.path, "a"):
                os.utime(self.path)
            self.last = now


def load_batch(args, rank, step):
    on_hang_node = args.hang_node and os.environ.get("SLURMD_NODENAME") == args.hang_node
    if (rank == args.hang_rank or on_hang_node) and step == args.at_step:
        while True:  # a data loader that never returns
            time.sleep(1)
    if rank == args.die_rank and step == args.at_step:
        os.kill(os.getpid(), signal.SIGKILL)
    g = torch.Generator().manual_seed(step * 1000 + rank)
    return torch.rand(16, 32, generator=g)


def main(argv=None):
    args = parse_args(argv)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.set_num_threads(1)
    model = DistributedDataParallel(torch.nn.Linear(32, 32))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    heartbeat = Heartbeat() if rank == 0 else None
    for step in range(args.steps):
        batch = load_batch(args, rank, step)
        optimizer.zero_grad()
        loss = ((model(batch) - batch) ** 2).mean()
        loss.backward()
        optimizer.step()
        total = loss.detach().clone()
        dist.all_reduce(total)
        if rank == 0:
            print(f"step {step} time {time.time():.3f} loss {total.item():.4f}", flush=True)
            heartbeat.beat()
        time.sleep(args.step_sleep)
    if rank == 0:
        print(f"done {args.steps} steps world {dist.get_world_size()}", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
