#!/usr/bin/env python3
"""A job whose chosen rank hangs in its data loading while the others wait for it, without
torch: for ddp-watch's verdict on more ranks than this machine can import torch for (256).

Rank 0 prints "step N time T" after each step, as tests/cluster/stall.py does. At --at-step,
rank --hang-rank blocks in load_batch and every other rank blocks in wait_for_peers.
"""
import argparse
import os
import time


def load_batch(hang):
    while hang:
        time.sleep(3600)


def wait_for_peers():
    while True:
        time.sleep(3600)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hang-rank", type=int, required=True)
    p.add_argument("--at-step", type=int, default=20)
    p.add_argument("--step-sleep", type=float, default=0.2)
    args = p.parse_args()
    rank = int(os.environ["RANK"])
    for step in range(args.at_step + 1):
        load_batch(rank == args.hang_rank and step == args.at_step)
        if step == args.at_step:
            wait_for_peers()
        if rank == 0:
            print(f"step {step} time {time.time():.3f}", flush=True)
        time.sleep(args.step_sleep)


if __name__ == "__main__":
    main()
