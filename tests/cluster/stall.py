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
  --bus-node N    at --at-step, every rank on Slurm node N dies of SIGBUS (as a memory or
                  device error kills a process)
  --exec-rank R   at --at-step, rank R becomes /bin/sleep (a rank that is no longer Python)
  --bar           rank 0 shows a tqdm progress bar on stderr instead of printing step lines
  --loader-workers N  batches come from a DataLoader with N worker processes
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
    p.add_argument("--bus-node", default="")
    p.add_argument("--exec-rank", type=int, default=-1)
    p.add_argument("--at-step", type=int, default=5)
    p.add_argument("--bar", action="store_true")
    p.add_argument("--loader-workers", type=int, default=0)
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


class Batches(torch.utils.data.Dataset):
    """Step N's batch of rank R, made in a DataLoader worker (or in the rank itself)."""

    def __init__(self, steps, rank):
        self.steps, self.rank = steps, rank

    def __len__(self):
        return self.steps

    def __getitem__(self, step):
        g = torch.Generator().manual_seed(step * 1000 + self.rank)
        return torch.rand(16, 32, generator=g)


def batches(args, rank):
    data = Batches(args.steps, rank)
    if args.loader_workers == 0:
        return (data[i] for i in range(args.steps))
    return iter(torch.utils.data.DataLoader(data, batch_size=None, num_workers=args.loader_workers))


def load_batch(args, rank, step, source):
    on_hang_node = args.hang_node and os.environ.get("SLURMD_NODENAME") == args.hang_node
    if (rank == args.hang_rank or on_hang_node) and step == args.at_step:
        while True:  # a data loader that never returns
            time.sleep(1)
    if rank == args.die_rank and step == args.at_step:
        os.kill(os.getpid(), signal.SIGKILL)
    if args.bus_node and os.environ.get("SLURMD_NODENAME") == args.bus_node and step == args.at_step:
        signal.signal(signal.SIGBUS, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGBUS)
    if rank == args.exec_rank and step == args.at_step:
        os.execv("/bin/sleep", ["sleep", "1000"])
    return next(source)


def import_ddp_dependencies():
    """Imports what DistributedDataParallel's constructor would import on first use.

    torch 2.x's constructor imports torch._dynamo: about 800 modules, 1.5 s on an idle core with
    Debian unstable's torch 2.14 and well over 10 s on a loaded 2-core machine. Done after
    init_process_group, whose gloo lines are the job's first output, that time would count
    against the tests' 10-15 s watchdog timeout instead of the startup allowance. torch 1.13
    has no torch._dynamo.
    """
    try:
        import torch._dynamo  # noqa: F401
    except ImportError:
        pass


def main(argv=None):
    args = parse_args(argv)
    import_ddp_dependencies()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.set_num_threads(1)
    model = DistributedDataParallel(torch.nn.Linear(32, 32))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    heartbeat = Heartbeat() if rank == 0 else None
    source = batches(args, rank)
    steps = range(args.steps)
    if args.bar and rank == 0:
        from tqdm import tqdm

        print(f"training world {dist.get_world_size()}", flush=True)  # one line, then the bar
        steps = tqdm(steps, file=sys.stderr, mininterval=0.5)
    for step in steps:
        batch = load_batch(args, rank, step, source)
        optimizer.zero_grad()
        loss = ((model(batch) - batch) ** 2).mean()
        loss.backward()
        optimizer.step()
        total = loss.detach().clone()
        dist.all_reduce(total)
        if rank == 0 and not args.bar:
            print(f"step {step} time {time.time():.3f} loss {total.item():.4f}", flush=True)
            heartbeat.beat()
        time.sleep(args.step_sleep)
    if rank == 0:
        print(f"done {args.steps} steps world {dist.get_world_size()}", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
