#!/usr/bin/env python3
"""The autoencoder of the hand-written scripts, trained with DistributedDataParallel on MNIST-shaped
data generated here (nothing is downloaded).

Runs as a task of `srun --ddp` (one process per task) or as a worker of a bare `torchrun`
under `srun --ddp=torchrun`: both export MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE, read
by env:// initialisation. gloo on CPU; NCCL and one GPU per process (LOCAL_RANK) with CUDA.

Checkpoints: when $DDP_CHECKPOINT_DIR (or --checkpoint-dir) is set, rank 0 writes
autoencoder.pt there after every epoch, atomically (temporary file in the same directory,
fsync, rename), and a run that finds it resumes after the last finished epoch. An epoch's
line is printed only after its checkpoint is durable, so a printed epoch is never redone.

Requeue notice: a ddpgen script that is about to requeue the job (Slurm's warning signal
before the time limit) creates the file named by $DDP_REQUEUE_NOTICE, a path on the shared
file system exported to every task; no signal reaches the training processes (NCCL's
threads catch some: nccl#704). After every batch the ranks agree (one all-reduce) whether
any of them sees the file; then rank 0 saves the state in the middle of the epoch (batch
index and every rank's partial loss sums included) and every rank stops. The next run resumes
at that batch, so the result is bit for bit the one of a run without a stop.

Output of rank 0, one line each, for scripts to parse:
    start world 6 backend gloo device cpu samples 1200 epochs 5 restart 0
    resumed from epoch 2                     (or: resumed from epoch 2 batch 4)
    epoch 3/5 loss 0.052411 world 6 seconds 0.41
    weights identical on 6 ranks
    requeue notice: saved at epoch 2 batch 4, stopping    (2 epochs and 4 batches done)
Exit status 0 when training finished and every rank holds rank 0's weights bit for bit.
"""
import argparse
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

k_checkpoint_name = "autoencoder.pt"
k_side = 28


class AE(nn.Module):
    """The hand-written scripts' model: 784 -> 128 -> 128 -> 128 -> 784, ReLU after every layer."""

    def __init__(self, input_shape: int = k_side * k_side, hidden: int = 128):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(input_shape, hidden), nn.ReLU(inplace=True),
            nn.Linear(hidden, hidden), nn.ReLU(inplace=True),
            nn.Linear(hidden, hidden), nn.ReLU(inplace=True),
            nn.Linear(hidden, input_shape), nn.ReLU(inplace=True),
        )

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features)


def synthetic_mnist(samples: int, seed: int = 1234) -> TensorDataset:
    """Returns `samples` 28x28 images in [0, 1] with labels 0-9, the same on every rank and run:
    each class is a fixed stroke pattern, each image that pattern shifted by up to two pixels,
    scaled in brightness and overlaid with a little noise, so there is structure to learn."""
    gen = torch.Generator().manual_seed(seed)
    # Ten class patterns: a few thick random strokes on a 28x28 canvas.
    ys, xs = torch.meshgrid(torch.arange(k_side, dtype=torch.float32),
                            torch.arange(k_side, dtype=torch.float32), indexing="ij")
    patterns = torch.zeros(10, k_side, k_side)
    for c in range(10):
        for _ in range(3):
            x0, y0, x1, y1 = (4 + 20 * torch.rand(4, generator=gen)).tolist()
            for t in torch.linspace(0, 1, 24).tolist():
                cx, cy = x0 + t * (x1 - x0), y0 + t * (y1 - y0)
                patterns[c] = torch.maximum(
                    patterns[c], torch.exp(-((xs - cx) ** 2 + (ys - cy) ** 2) / 2.0))
    labels = torch.randint(0, 10, (samples,), generator=gen)
    shifts = torch.randint(-2, 3, (samples, 2), generator=gen)
    scale = 0.7 + 0.3 * torch.rand(samples, 1, 1, generator=gen)
    images = torch.empty(samples, k_side, k_side)
    for i in range(samples):
        dy, dx = shifts[i].tolist()
        images[i] = torch.roll(patterns[labels[i]], shifts=(dy, dx), dims=(0, 1))
    images = (images * scale + 0.05 * torch.rand(samples, k_side, k_side, generator=gen))
    return TensorDataset(images.clamp_(0, 1).view(samples, -1), labels)


def save_atomic(state: dict, path: str) -> None:
    """Writes `state` to `path` so that `path` always holds either the previous complete
    checkpoint or the new complete one, whatever moment the process is killed: torch.save to a
    temporary file in the same directory (same file system, so the rename is atomic), fsync
    it, rename it over `path`, then fsync the directory so the rename itself is durable."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp")
    try:
        # mkstemp creates the file 0600; give it the mode a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def remove_stale_temporaries(path: str) -> None:
    """Removes the temporary files save_atomic leaves when a run is killed mid-save (they are
    never the checkpoint itself, only disk space)."""
    directory = os.path.dirname(os.path.abspath(path))
    prefix = "." + os.path.basename(path) + "."
    for name in os.listdir(directory):
        if name.startswith(prefix) and name.endswith(".tmp"):
            try:
                os.unlink(os.path.join(directory, name))
            except FileNotFoundError:
                pass


def load_checkpoint(path: str):
    """Returns the checkpoint at `path`, or None when there is none yet."""
    if not os.path.exists(path):
        return None
    return torch.load(path, map_location="cpu")


class Heartbeat:
    """Touches $DDP_HEARTBEAT_FILE, when set (ddp-watch --heartbeat exports it), at most once a
    second: progress that ddp-watch sees even when nothing is printed for a long while. One
    rank is enough: in synchronous training a stuck rank soon stops every other."""

    def __init__(self, enabled: bool):
        self.path = os.environ.get("DDP_HEARTBEAT_FILE", "") if enabled else ""
        self.last = 0.0

    def beat(self) -> None:
        now = time.monotonic()
        if self.path and now - self.last >= 1.0:
            with open(self.path, "a"):
                os.utime(self.path)
            self.last = now


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=5, help="epochs in total (default 5)")
    p.add_argument("--samples", type=int, default=1200, help="synthetic images (default 1200)")
    p.add_argument("--batch-size", type=int, default=32, help="per process (default 32)")
    p.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (default 1e-3)")
    p.add_argument("--epoch-sleep", type=float, default=0.0,
                   help="seconds to sleep in every epoch, so tests can preempt mid-run")
    p.add_argument("--step-sleep", type=float, default=0.0,
                   help="seconds to sleep after every batch, so tests can stop mid-epoch")
    p.add_argument("--checkpoint-dir", default=os.environ.get("DDP_CHECKPOINT_DIR", ""),
                   help="default $DDP_CHECKPOINT_DIR; empty: no checkpoints")
    p.add_argument("--seed", type=int, default=0, help="model initialisation seed")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    use_cuda = torch.cuda.is_available()
    backend = "nccl" if use_cuda else "gloo"
    # env:// reads MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE.
    dist.init_process_group(backend=backend, init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    if use_cuda:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
        # Several ranks share each node's cores; one thread each avoids oversubscription.
        torch.set_num_threads(1)

    def say(text: str) -> None:
        if rank == 0:
            print(text, flush=True)

    say(f"start world {world} backend {backend} device {device.type} samples {args.samples} "
        f"epochs {args.epochs} restart {os.environ.get('SLURM_RESTART_COUNT', '0')}")

    # The same seed on every rank gives the same initial weights; DDP also broadcasts rank 0's.
    torch.manual_seed(args.seed)
    model = AE().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    ckpt_path = os.path.join(args.checkpoint_dir, k_checkpoint_name) if args.checkpoint_dir else ""
    first_epoch = 0
    first_batch = 0  # > 0: the checkpoint was saved at a requeue notice, inside an epoch
    partial = None   # that epoch's loss sums so far
    losses = []
    if ckpt_path:
        if rank == 0:
            os.makedirs(args.checkpoint_dir, exist_ok=True)
            remove_stale_temporaries(ckpt_path)
        # Every rank reads the same file (shared file system), so optimizer state matches too.
        state = load_checkpoint(ckpt_path)
        if state is not None:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            first_epoch = state["epoch"]
            first_batch = state.get("batch", 0)
            partial = state.get("partial")
            losses = list(state["losses"])
            say(f"resumed from epoch {first_epoch}" +
                (f" batch {first_batch}" if first_batch else ""))
        # No rank may start training (and rank 0 overwrite the file) before all have read it.
        dist.barrier()

    if first_batch and state["world_size"] != world:
        say(f"the checkpoint was saved inside an epoch by {state['world_size']} ranks; "
            f"resume it with as many (this run has {world})")
        dist.destroy_process_group()
        return 1
    ddp = DistributedDataParallel(model, device_ids=[device.index] if use_cuda else None)
    # DDP lays its gradient buckets out again after its first backward pass, in the order the
    # gradients became ready. That pass is taken here, on zeros and with all-zero gradients,
    # in every run: a fresh and a resumed run then sum gradients across ranks in the same
    # order at every real step, and their weights agree to the last bit.
    (ddp(torch.zeros(1, k_side * k_side, device=device)).sum() * 0).backward()
    optimizer.zero_grad()
    dataset = synthetic_mnist(args.samples)
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=1)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    criterion = nn.MSELoss()
    notice = os.environ.get("DDP_REQUEUE_NOTICE", "")

    def save(epoch: int, batch: int, sums) -> None:
        if rank == 0 and ckpt_path:
            save_atomic({"epoch": epoch, "batch": batch,
                         "partial": None if sums is None else sums.cpu(),
                         "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                         "losses": losses, "world_size": world}, ckpt_path)

    def notice_given() -> bool:
        """True on every rank as soon as any rank sees the notice file: all stop at the same
        batch, or the others would wait forever in the next all-reduce."""
        if not notice:
            return False
        seen = torch.tensor([1 if os.path.exists(notice) else 0], device=device)
        dist.all_reduce(seen, op=dist.ReduceOp.MAX)
        return seen.item() == 1
    heartbeat = Heartbeat(rank == 0)

    for epoch in range(first_epoch, args.epochs):
        started = time.monotonic()
        sampler.set_epoch(epoch)  # a different shuffle each epoch, the same after a resume
        total = torch.zeros(2, dtype=torch.float64, device=device)
        skip = 0
        if epoch == first_epoch and first_batch:
            skip = first_batch  # the batches the saved state already holds
            total = partial[rank].to(device)  # this rank's own sums, as saved
        for step, (features, _) in enumerate(loader):
            if step < skip:
                continue
            features = features.to(device, non_blocking=True)
            optimizer.zero_grad()
            loss = criterion(ddp(features), features)
            loss.backward()
            optimizer.step()
            total[0] += loss.item() * features.shape[0]
            total[1] += features.shape[0]
            if args.step_sleep > 0:
                time.sleep(args.step_sleep)
            if notice_given():
                # Every rank's partial sums, so that each resumes with its own.
                sums = [torch.zeros_like(total) for _ in range(world)]
                dist.all_gather(sums, total)
                save(epoch, step + 1, torch.stack(sums))
                say(f"requeue notice: saved at epoch {epoch} batch {step + 1}, stopping")
                dist.barrier()
                dist.destroy_process_group()
                return 0
            heartbeat.beat()
        if args.epoch_sleep > 0:
            time.sleep(args.epoch_sleep)
        dist.all_reduce(total)  # the epoch's mean loss over every sample of every rank
        epoch_loss = (total[0] / total[1]).item()
        losses.append(epoch_loss)
        save(epoch + 1, 0, None)
        say(f"epoch {epoch + 1}/{args.epochs} loss {epoch_loss:.6f} world {world} "
            f"seconds {time.monotonic() - started:.2f}")
    if first_epoch >= args.epochs:
        say(f"nothing to train: the checkpoint already holds {first_epoch} epochs")

    # Every rank compares its weights with rank 0's, exactly.
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    reference = flat.clone()
    dist.broadcast(reference, src=0)
    differ = torch.tensor([0 if torch.equal(flat, reference) else 1], device=device)
    dist.all_reduce(differ)
    identical = differ.item() == 0
    if identical:
        say(f"weights identical on {world} ranks")
    else:
        say(f"weights differ from rank 0 on {differ.item()} of {world} ranks")
    if ckpt_path:
        say(f"checkpoint {ckpt_path}")
    dist.barrier()
    dist.destroy_process_group()
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
