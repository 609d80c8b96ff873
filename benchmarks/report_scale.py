"""How long a report of a large store takes: N synthetic finished runs (a 40-point learning curve
each, recall at four D, several models, rates and seeds) written to a fresh store, then
`report --compact` and the full report timed, with their sizes. Prints figures; asserts nothing.

    OMP_NUM_THREADS=1 python benchmarks/report_scale.py --runs 2000 [--full-runs 2000]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def records(n: int):
    from evalsuite.records import RunRecord

    models = [("softmax", None), ("linear", "elu1"), ("linear", "dpfp"), ("delta", None), ("gla", None)]
    for i in range(n):
        name, fmap = models[i % len(models)]
        D = (4, 8, 16, 32)[(i // len(models)) % 4]
        lr = (1e-3, 3e-3, 1e-2)[(i // 20) % 3]
        seed = i // 60
        acc = min(0.99, 0.3 + 0.1 * (i % 7))
        history = [{"step": 50 * (k + 1), "val_accuracy": acc * k / 39, "train_loss": 2 - acc * k / 39,
                    "val_loss": 2 - acc * k / 39} for k in range(40)]
        config = {"task": {"name": "recall", "seq_len": 4 * D, "num_kv_pairs": D},
                  "model": {"name": name, "feature_map": fmap, "d_model": 64, "n_layers": 2, "i": i},
                  "train": {"lr": lr, "epochs": 8.0}, "seed": seed}
        metrics = {"accuracy": acc, "val_accuracy": acc, "floor": 1 / D, "floor_reader": "chance rule",
                   "context_chance": 1 / D, "majority_rate": 0.01, "loss": 1.0, "steps": 2000, "best_step": 2000,
                   "budget_steps": 2000, "state_size": 8000, "seq_len": 4 * D}
        yield RunRecord(run_id=f"bench{i:06d}", config=config, status="done", metrics=metrics, history=history)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--full-runs", type=int, default=2000, help="runs in the timed full (non-compact) report")
    args = parser.parse_args()

    from evalsuite.reports import builder
    from evalsuite.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "s.db")
        begin = time.perf_counter()
        for r in records(args.runs):
            store.finish(r)
        print(f"store     {args.runs:,} runs written in {time.perf_counter() - begin:.1f} s")
        for n, compact in ((args.runs, True), (args.full_runs, False)):
            runs = store.runs()[:n]
            begin = time.perf_counter()
            path = builder.write(runs, Path(tmp) / f"r-{n}-{compact}.html", title="bench", compact=compact)
            took = time.perf_counter() - begin
            print(f"report    {n:,} runs, {'compact' if compact else 'full':<7} {took:6.1f} s "
                  f"({took / n * 1000:.0f} ms a run), {path.stat().st_size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
