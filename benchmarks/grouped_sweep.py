"""Grouped against ungrouped sweep throughput (issue 17); prints figures, asserts nothing.

Runs one sweep spec twice through ``evalsuite sweep``, each into its own fresh store: with
``--group on`` (points that differ only in rate and seed trained as one batched model) and with
``--group off`` (one run at a time per worker). Prints the wall time and runs per hour of each,
and every run's test accuracy, steps and training loss both ways (the same runs, so the figures
should agree up to float rounding; see tests/train/test_group.py for where they part).

    python benchmarks/grouped_sweep.py [--spec examples/sweeps/group-cpu.yaml] [--device cpu]
        [--workers 1] [--out results/bench-grouped] [--first on|off]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sweep(spec: str, group: str, device: str, workers: int, store: Path) -> float:
    if store.parent.exists():
        shutil.rmtree(store.parent)  # a fresh store: nothing cached
    cmd = [sys.executable, "-m", "evalsuite.cli", "sweep", spec, "--group", group, "--device", device,
           "--workers", str(workers), "--store", str(store), "--no-report"]
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.returncode not in (0, 1):  # 1: some runs failed, which the table shows
        sys.exit(f"{' '.join(cmd)} exited {out.returncode}:\n{out.stderr[-2000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default=str(ROOT / "examples" / "sweeps" / "group-cpu.yaml"))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", default="results/bench-grouped")
    parser.add_argument("--first", choices=["on", "off"], default="on", help="which sweep runs first")
    args = parser.parse_args()

    from evalsuite.store import Store

    out = Path(args.out)
    order = [args.first, "off" if args.first == "on" else "on"]
    walls = {g: sweep(args.spec, g, args.device, args.workers, out / f"group-{g}" / "evalsuite.db") for g in order}
    runs = {g: {r.run_id: r for r in Store(out / f"group-{g}" / "evalsuite.db").runs()} for g in order}
    print(f"spec {args.spec}, device {args.device}, {args.workers} worker(s)")
    print(f"{'model':>8} {'lr':>8} {'seed':>4} {'acc grouped':>11} {'acc alone':>9} {'steps g/a':>11} {'train loss g/a':>17} status")
    for run_id, alone in sorted(runs["off"].items(), key=lambda kv: (kv[1].model, kv[1].config["train"]["lr"], kv[1].config["seed"])):
        g = runs["on"].get(run_id)
        gm, am = (g.metrics if g else {}), alone.metrics
        fmt = lambda v, f: format(v, f) if isinstance(v, (int, float)) else "-"  # noqa: E731
        print(f"{alone.model:>8} {alone.config['train']['lr']:>8g} {alone.config['seed']:>4} {fmt(gm.get('accuracy'), '.4f'):>11} "
              f"{fmt(am.get('accuracy'), '.4f'):>9} {fmt(gm.get('steps'), 'd'):>5}/{fmt(am.get('steps'), 'd'):<5} "
              f"{fmt(gm.get('train_loss'), '.4f'):>8}/{fmt(am.get('train_loss'), '.4f'):<8} "
              f"{g.status if g else 'missing'}/{alone.status}")
    n = len(runs["off"])
    for g in ("on", "off"):
        label = "grouped (--group on)" if g == "on" else "one at a time (--group off)"
        print(f"{label:<28} {walls[g]:8.0f} s  {n / walls[g] * 3600:7.1f} runs/hour")
    print(f"grouped / one at a time: x{walls['off'] / walls['on']:.2f} runs per hour")


if __name__ == "__main__":
    main()
