"""How long `evalsuite reproduce` would take at CPU scale under the evidence method, per experiment,
from each point's training steps and a measured step time; prints a Markdown table.

    OMP_NUM_THREADS=1 python benchmarks/project_reproduce.py [NAMES ...] [--workers 2] [--out FILE] [--paid NAMES]

Each experiment's CPU sweep is expanded (seed 0 at its rates, as `reproduce` starts it). The cells
its escalation settles are read through the experiment's own ``cells`` (so MAD's narrowed
escalation counts as it runs; cells read from one point, as a mixed-D run is read at each D, are
counted once); a cell costs its base runs, then 3 reported seeds at the chosen
rate, then, when it stays below the ceiling, the ladder's first rung (4x) on every reported seed at
the chosen rate (3 runs, each continuing its base run from the snapshot at the base's decay: 0.8
of the base's steps are not run again, so 3.2x a base run each). Two figures per experiment bound
the cost: **learned** (every cell reaches the ceiling: no rung) and **below** (every cell stays
below it: every 4x rung). Not counted in these two: the 16x rung, which only cells a clause depends on climb
and which adds 12.8x a base run per reported seed to each; plateau stops (rungs above the base end
early once flat at the ceiling, 0.95); early stops at the target; rate grids grown past an edge; a runner-up
rate within 0.01 (it climbs too); seeds added where seeds disagree (up to 5); validation and test
passes (``--overhead`` adds a share for them, 10% by default). A third figure, **16x**, adds the
16x rung on every reported seed of every cell (an upper bound: only cells a clause depends on that
still move at 4x climb it; in the binding setting many do, MQAR's plateau outlasting 4x the budget). Step time: forward, backward and AdamW at the run's batch
shape, one thread, measured once per distinct model and shape (median of ``--steps`` after two
warm-up steps); measure on an idle machine, or read the figures as loaded ones.
"""
from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time

import torch

REPORTED_SEEDS = 3
LONG_RUNS = 3  # every reported seed at the chosen rate
BUDGET = 4 * 0.8  # a 4x rung continues its base run from the snapshot at the base's decay (step 0.8 of its budget)
BUDGET_16 = 16 - 4 * 0.8  # a 16x rung continues its 4x run from that run's decay (3.2 base budgets in): 12.8 more


def step_seconds(config, steps: int) -> float:
    """One training step's wall time for this run's model and batch shape (one thread)."""
    T = max(t.seq_len for t in config.task.train_tasks)
    vocab = config.task.vocab_size
    model = config.model.build(vocab)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, vocab, (config.train.batch_size, T))
    times = []
    for i in range(steps + 2):
        begin = time.perf_counter()
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out.flatten(0, -2).float(), x.flatten()[:out.flatten(0, -2).shape[0]])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if i >= 2:
            times.append(time.perf_counter() - begin)
    return statistics.median(times)


def _command(argv: list[str]) -> str:
    """The invocation as the generated file names it: every argument but ``--note`` (written above the table)."""
    out, skip = [], False
    for a in argv:
        if skip or a == "--note" or a.startswith("--note="):
            skip = a == "--note"
            continue
        out.append(a)
    return shlex.join(out)


def listed(exp) -> str:
    cpu = exp.minutes["cpu"]
    return f"{cpu[0]:g} - {cpu[1]:g}" if isinstance(cpu, tuple) else f"{cpu:g}"


def total_steps(config) -> int:
    n = config.train.num_train
    return max(1, round(config.train.epochs * max(1, n // config.train.batch_size)))


def fake_run(point):
    from evalsuite.records import RunRecord
    m = {"accuracy": 0.5, "val_accuracy": 0.5, "floor": 0.1, "steps": 1, "best_step": 1, "loss": 1.0}
    return RunRecord(run_id=point.run_id, config=point.config.as_dict(), status="done", metrics=m)


def project(names, workers: int, steps: int, overhead: float, paid=()) -> list[str]:
    """The table. A point (and a cell's seeds and rungs) is counted once, by the first experiment that
    has it: experiments that share configurations (a group's one sweep; the binding setting's mixed-D
    runs, read by capacity-trained and the failure findings) pay for them once. ``paid``: experiments
    whose configurations are paid for elsewhere (run, or projected, by their own issue): what the
    others share with them costs nothing here."""
    from evalsuite import reproduce
    from evalsuite.protocol import setting_key
    from evalsuite.sweep import expand

    measured: dict[str, float] = {}

    def cost(config) -> float:
        key = repr((config.model.section(), config.train.batch_size, config.task.vocab_size,
                    max(t.seq_len for t in config.task.train_tasks)))
        if key not in measured:
            measured[key] = step_seconds(config, steps)
        return measured[key] * total_steps(config) * (1 + overhead)

    lines = [f"| experiment | points (new) | cells settled | CPU-min, every cell learned | CPU-min, every cell below | "
             f"wall min on {workers} workers (learned - below) | wall min with every 16x rung | listed |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    seen_points: set[str] = set()
    seen_settings: set[str] = set()  # cells read from one point (mixed-D runs read at each D) share its runs
    for exp in reproduce.select(list(paid)) if paid else []:
        if (spec := exp.spec("cpu")) is not None:
            points = expand(spec)
            seen_points |= {p.run_id for p in points}
            seen_settings |= {setting_key(p.config.as_dict()) for p in points}
    grand = [0.0, 0.0, 0.0]
    for exp in reproduce.select(names):
        spec = exp.spec("cpu")
        if spec is None:
            lines.append(f"| {exp.name} | probes only | | | | | {listed(exp)} |")
            continue
        points = expand(spec)
        new = [p for p in points if p.run_id not in seen_points]
        seen_points |= {p.run_id for p in points}
        by_id = {p.run_id: p for p in points}
        base = sum(cost(p.config) for p in new)
        cells = exp.judged_cells([fake_run(p) for p in points], "cpu")
        seeds = below = top = 0.0
        for c in cells:
            configs = [by_id[r.run_id].config for r in c.runs if r.run_id in by_id]
            if not configs or (point := setting_key(configs[0].as_dict())) in seen_settings:
                continue
            seen_settings.add(point)
            one = cost(configs[0])
            seeds += REPORTED_SEEDS * one
            below += LONG_RUNS * BUDGET * one
            top += LONG_RUNS * BUDGET_16 * one
        learned_min, below_min = (base + seeds) / 60, (base + seeds + below) / 60
        top_min = below_min + top / 60
        if not new and not seeds:
            lines.append(f"| {exp.name} | {len(points)} (0: shared above) | {len(cells)} | 0 | 0 | 0 | 0 | {listed(exp)} |")
            continue
        grand[0] += learned_min
        grand[1] += below_min
        grand[2] += top_min
        lines.append(f"| {exp.name} | {len(points)} ({len(new)}) | {len(cells)} | {learned_min:,.0f} | {below_min:,.0f} | "
                     f"{learned_min / workers:,.0f} - {below_min / workers:,.0f} | {top_min / workers:,.0f} | {listed(exp)} |")
    lines.append(f"| all | | | {grand[0]:,.0f} | {grand[1]:,.0f} | {grand[0] / workers:,.0f} - {grand[1] / workers:,.0f} | "
                 f"{grand[2] / workers:,.0f} | |")
    lines.append("")
    lines.append(f"{len(measured)} distinct model and batch shapes timed, {steps} steps each after two warm-up steps."
                 + (f" Paid for elsewhere (their configurations cost nothing here): {', '.join(paid)}." if paid else ""))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per model and shape")
    parser.add_argument("--overhead", type=float, default=0.10, help="share added for data, validation and test")
    parser.add_argument("--out", default=None, help="also write the table to this Markdown file")
    parser.add_argument("--note", default="", help="a line on the machine's state while measuring (written above the table)")
    parser.add_argument("--paid", nargs="*", default=[], metavar="NAME",
                        help="experiments whose configurations are paid for elsewhere: what NAMES share with them costs nothing")
    args = parser.parse_args()
    torch.set_num_threads(1)
    head = ["# Projected CPU time of `evalsuite reproduce` under the evidence method", "",
            f"Generated by `OMP_NUM_THREADS=1 python benchmarks/project_reproduce.py {_command(sys.argv[1:])}` "
            f"on {time.strftime('%Y-%m-%d')}; what it counts and leaves out is in the script's docstring. "
            "\"learned\": every cell a verdict settles reaches the ceiling (3 rates, then 3 reported seeds, full "
            "budget: early stops make it less); \"below\": every one stays below it (add 3 runs at 4x the budget each); "
            "\"with every 16x rung\": every one also climbs to 16x (3 more runs each, an upper bound). "
            "\"listed\" is the experiment's own `minutes`, what `evalsuite reproduce --list` prints: set from an "
            "earlier run of this script, so the two differ by the machine's load between runs (on a shared machine "
            "by 10 to 30%).", ""]
    if args.note:
        head += [args.note, ""]
    text = "\n".join(head + project(args.names, args.workers, args.steps, args.overhead, args.paid))
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
