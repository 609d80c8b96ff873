"""What a rung of the ladder saves by continuing the rung below it, measured: a base run, then its 4x
and 16x rungs each continued from the snapshot the rung below saved (kept in the store), against
the same rungs trained from scratch (a store of their own). Prints each run's steps and seconds and
the saving per rung. The records must match (a continued rung is the same run).

    OMP_NUM_THREADS=1 python benchmarks/rung_saving.py --out results/bench/rung-saving.md
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="recall")
    parser.add_argument("--model", default="linear")
    parser.add_argument("--epochs", type=float, default=1.0, help="the base rung's budget")
    parser.add_argument("--rungs", type=int, default=3, help="1x, 4x, 16x ...: how many rungs")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    from evalsuite.pipeline import run_one
    from evalsuite.protocol import LADDER
    from evalsuite.resolve import resolve
    from evalsuite.snapshots import total_steps
    from evalsuite.store import Store

    root = Path(tempfile.mkdtemp(prefix="rung-saving-"))
    climbing, scratch = Store(root / "ladder" / "evalsuite.db"), Store(root / "scratch" / "evalsuite.db")
    base = resolve(args.task, args.model, overrides={"train.epochs": args.epochs, "train.stop_at_target": False})
    warmup = base.train.warmup(total_steps(base))  # kept in steps, so that every rung is one schedule held longer
    lines = [f"# Rung saving: {args.model} on {args.task}, base {args.epochs:g} epochs (stop at target off)", "",
             "| rung | steps | continued from step | seconds continued | seconds from scratch | saved | records equal |",
             "|---:|---:|---:|---:|---:|---:|---|"]
    for k in range(args.rungs):
        config = base.replace(epochs=LADDER[k] * args.epochs, warmup_steps=warmup)
        begin = time.perf_counter()
        up = run_one(config, device="cpu", store=climbing)
        continued = time.perf_counter() - begin
        if k == 0:
            lines.append(f"| 1x | {up.metrics['steps']:,} | | {continued:.1f} | {continued:.1f} | | |")
            continue
        begin = time.perf_counter()
        fresh = run_one(config, device="cpu", store=scratch)
        alone = time.perf_counter() - begin
        same = (up.metrics["steps"] == fresh.metrics["steps"]
                and abs(up.metrics["accuracy"] - fresh.metrics["accuracy"]) < 1e-4)
        lines.append(f"| {LADDER[k]}x | {up.metrics['steps']:,} | {up.metrics.get('branched_from_step', 'none')} | "
                     f"{continued:.1f} | {alone:.1f} | {1 - continued / alone:.0%} | {'yes' if same else 'NO'} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
