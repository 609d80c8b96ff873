"""Grouped training against one run at a time, per model and width, in training steps per second.

    python benchmarks/grouped_step.py [--widths 16,32,64] [--models linear,delta,softmax,gla] [--steps 200]

For each (model, width): G runs that differ only in rate and seed (3 rates x 2 seeds) on the
default MQAR setting, each trained for ``--steps`` steps with no evaluation until the end, once as
one group (``train_group``) and once one after another (``train_one``), in the same process and
order each round; the figure is member-steps per second (G x steps / seconds) and their ratio, the
median over ``--rounds``. This is what ``--group auto`` decides by (``train.group.pays``).
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch


def configs(model: str, width: int, steps: int):
    from evalsuite.resolve import resolve

    overrides = {"model.d_model": width, "train.num_train": 64 * steps, "train.epochs": 1, "train.eval_every": 10 * steps,
                 "train.num_val": 64, "train.num_test": 64}
    return [resolve("recall", model, seed=s, overrides={**overrides, "train.lr": lr})
            for lr in (1e-3, 3e-3, 1e-2) for s in (0, 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="16,32,64")
    parser.add_argument("--models", default="linear,delta,softmax,gla")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from evalsuite.train import train_group, train_one

    cpu = torch.device("cpu")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; 6 runs (3 rates x 2 seeds), "
          f"{args.steps} steps each; member-steps/s, median of {args.rounds} rounds")
    print(f"  {'model':<8} {'width':>5} {'grouped':>9} {'alone':>9} {'grouped/alone':>14}")
    for model in args.models.split(","):
        for width in map(int, args.widths.split(",")):
            cs = configs(model, width, args.steps)
            grouped, alone = [], []
            for _ in range(args.rounds):
                start = time.perf_counter()
                train_group(cs, cpu)
                grouped.append(len(cs) * args.steps / (time.perf_counter() - start))
                start = time.perf_counter()
                for c in cs:
                    train_one(c, cpu)
                alone.append(len(cs) * args.steps / (time.perf_counter() - start))
            g, a = statistics.median(grouped), statistics.median(alone)
            print(f"  {model:<8} {width:>5} {g:>9.1f} {a:>9.1f} {g / a:>13.2f}x")


if __name__ == "__main__":
    main()
