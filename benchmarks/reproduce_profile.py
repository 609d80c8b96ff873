"""Where the wall time of an `evalsuite reproduce` invocation goes.

    python benchmarks/reproduce_profile.py delta-vs-linear copy --workers 2 --store results/profile/evalsuite.db

Runs `evalsuite reproduce NAMES` in this process (the CLI's own code path, nothing skipped), with
timers around the driver's phases, and reads each trained run's own phase timings from its record
(``time_data_s``, ``time_steps_s``, ``time_eval_s``, ``time_test_s``, ``time_analysis_s``, measured in
the worker). Prints two tables as Markdown:

- worker time: the phases summed over the runs this invocation trained, as shares of the workers'
  capacity (wall time x workers); what no run accounts for is process start-up, scheduling, and
  workers idle while the driver works or while the last runs of a sweep finish;
- driver time: point validation, store writes, judging and the report, as shares of the wall time;

and the runs that were trained but that no verdict reads (neither a base-budget run of a cell,
which the rate choice reads, nor a 4x rerun at a cell's chosen rate). A fresh store measures
everything; a store that already holds runs measures only what was left to do.
"""
from __future__ import annotations

import argparse
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

WORKER_PHASES = [("time_data_s", "data generation and staging, model build"), ("time_steps_s", "training steps"),
                 ("time_eval_s", "validation passes"), ("time_test_s", "testing the best checkpoint"),
                 ("time_analysis_s", "run analyses")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="+")
    parser.add_argument("--store", required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--group", default="off")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", default=None, help="also write the tables to this Markdown file")
    parser.add_argument("--cells-only", action="store_true",
                        help="run nothing: print the cost of each cell from what the store holds")
    args = parser.parse_args()

    from evalsuite import reproduce, sweep
    from evalsuite.cli import main as cli
    from evalsuite.reports import builder
    from evalsuite.store import Store

    if args.cells_only:
        print("\n".join(cell_costs(args.names, Store(args.store))))
        return
    driver: dict[str, float] = defaultdict(float)

    @contextmanager
    def timing(name):
        begin = time.perf_counter()
        try:
            yield
        finally:
            driver[name] += time.perf_counter() - begin

    def timed(module, attr, name):
        original = getattr(module, attr)

        def wrapper(*a, **k):
            with timing(name):
                return original(*a, **k)
        setattr(module, attr, wrapper)

    timed(sweep, "expand", "validating points (resolve every point)")
    timed(sweep, "record", "store writes (records and weights)")
    timed(reproduce, "verdicts", "judging (verdicts from the store)")
    timed(builder, "write", "rendering the report")

    start_clock, begin = time.time(), time.perf_counter()
    cli(["reproduce", *args.names, "--store", args.store, "--workers", str(args.workers), "--device", args.device,
         "--group", args.group, "--compact"], standalone_mode=False)
    wall = time.perf_counter() - begin

    store = Store(args.store)
    runs = [r for r in store.runs() if (r.started_at or 0) >= start_clock - 1]
    lines = [f"# reproduce profile: {' '.join(args.names)}", "",
             f"{len(runs)} runs trained in {wall:,.0f} s wall with {args.workers} workers "
             f"(capacity {wall * args.workers:,.0f} worker-seconds).", "",
             "| worker time | seconds | share of capacity |", "|---|---:|---:|"]
    capacity = wall * args.workers
    accounted = 0.0
    for key, label in WORKER_PHASES:
        seconds = sum(r.metrics.get(key) or 0.0 for r in runs)
        accounted += seconds
        lines.append(f"| {label} | {seconds:,.0f} | {seconds / capacity:.1%} |")
    in_runs = sum(worker_seconds(r) for r in runs)
    lines.append(f"| inside a run, outside these phases | {max(0.0, in_runs - accounted):,.0f} | "
                 f"{max(0.0, in_runs - accounted) / capacity:.1%} |")
    lines.append(f"| no run: process start-up, scheduling, idle workers | {max(0.0, capacity - in_runs):,.0f} | "
                 f"{max(0.0, capacity - in_runs) / capacity:.1%} |")
    lines += ["", "| driver time | seconds | share of wall |", "|---|---:|---:|"]
    for name, seconds in driver.items():
        lines.append(f"| {name} | {seconds:,.1f} | {seconds / wall:.1%} |")

    steps = sum(r.metrics.get("steps") or 0 for r in runs)
    read = set()
    for exp in reproduce.select(args.names):
        for cell in exp.cells(reproduce.experiment_runs(exp, "cpu", store), "cpu").values():
            read |= {r.run_id for r in cell.base_runs} | {r.run_id for r in cell.long_runs}
    unread = [r for r in runs if r.run_id not in read]
    lines += ["", f"Training steps: {steps:,} in {len(runs)} runs. Runs no verdict reads: {len(unread)} "
              f"({sum(r.metrics.get('steps') or 0 for r in unread):,} steps)"
              + (": " + ", ".join(f"{r.model} lr {r.lr:g} seed {r.seed} epochs {r.config['train']['epochs']:g}"
                                  for r in unread[:10]) if unread else "") + "."]
    lines += [""] + cell_costs(args.names, store)
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")


def worker_seconds(run) -> float:
    """A run's share of a worker's time: its wall time, or, for a member of a group trained batched
    (whose members' wall times overlap), that divided by the group's size."""
    return (run.metrics.get("wall_time_s") or 0.0) / (run.metrics.get("group_size") or 1)


def cell_costs(names: list[str], store) -> list[str]:
    """What each cell a verdict reads cost: its runs (every rate, seed and budget the store holds
    for it), their training steps and worker-seconds."""
    from evalsuite import reproduce

    lines = ["| experiment | cell | runs | steps | worker-seconds |", "|---|---|---:|---:|---:|"]
    total_steps = total_seconds = 0.0
    seen: set[str] = set()
    for exp in reproduce.select(names):
        for cell in exp.cells(reproduce.experiment_runs(exp, "cpu", store), "cpu").values():
            steps = sum(r.metrics.get("steps", 0) - r.metrics.get("branched_from_step", 0) for r in cell.runs)
            seconds = sum(worker_seconds(r) for r in cell.runs)
            lines.append(f"| {exp.name} | {cell.label} | {len(cell.runs)} | {steps:,} | {seconds:,.0f} |")
            fresh = [r for r in cell.runs if r.run_id not in seen]
            seen |= {r.run_id for r in fresh}
            total_steps += sum(r.metrics.get("steps", 0) - r.metrics.get("branched_from_step", 0) for r in fresh)
            total_seconds += sum(worker_seconds(r) for r in fresh)
    lines.append(f"| all | (each run counted once) | {len(seen)} | {total_steps:,.0f} | {total_seconds:,.0f} |")
    return lines


if __name__ == "__main__":
    main()
