"""`evalsuite reproduce --smoke`: every sweep point of the named experiments once, at a few steps.

A smoke run checks the pipeline an experiment's verdict rests on (each point resolves, trains on
its task mixture, evaluates every segment beside its floors, is stored, the verdict function
reads the records, the report renders) in minutes instead of hours. It tests nothing the finding
claims: at ``STEPS`` steps most cells sit at their floor, so its verdicts are printed and titled
as the smoke's. It runs no escalation (there is nothing to settle) and no capacity probes, and it
writes to its own store (``smoke/evalsuite.db`` beside the default one), so that its runs never
mix with a reproduction's.
"""
from __future__ import annotations

from evalsuite.config import RunConfig
from evalsuite.records import RunRecord, Verdict

from .experiment import Experiment

STEPS = 16        # training steps per point
EXAMPLES = 64     # validation and test examples per set (each eval segment's too)
LABEL = f"smoke ({STEPS} steps a run: tests the pipeline, not the finding)"


def smoke_config(config: RunConfig, steps: int = STEPS, examples: int = EXAMPLES) -> RunConfig:
    """``config`` at ``steps`` steps (the epochs that many batches of its training set make) and
    at most ``examples`` validation and test examples (each eval segment's too); everything else,
    the training set's size included (MAD's memorisation levels differ by it), as it was."""
    data = config.as_dict()
    train = dict(data["train"])
    batches = max(1, train["num_train"] // train["batch_size"])  # per epoch, as the trainer counts them
    train.update(epochs=steps / batches, num_val=min(train["num_val"], examples),
                 num_test=min(train["num_test"], examples), eval_every=max(1, steps // 2), warmup_steps=None,
                 patience=0)
    task = dict(data["task"])
    if "eval_segments" in task:
        task["eval_segments"] = [{**s, **({"num_test": min(s["num_test"], examples)} if s.get("num_test") else {})}
                                 for s in task["eval_segments"]]
    return RunConfig.from_dict({**data, "train": train, "task": task})


def smoke_points(experiments: list[Experiment], scale: str) -> dict[str, list]:
    """Each experiment's sweep points as smoke points (experiments that share a sweep share them);
    an experiment with no sweep at ``scale`` (probes only) has none."""
    from evalsuite.sweep import Point, expand

    out: dict[str, list] = {}
    for exp in experiments:
        spec = exp.spec(scale)
        out[exp.name] = [] if spec is None else [Point(p.axes, smoke_config(p.config)) for p in expand(spec)]
    return out


def run_smoke(experiments: list[Experiment], scale: str, store, run, echo=print) -> tuple[list[Verdict], list[RunRecord]]:
    """Train every experiment's smoke points (``run(points, name, spec)``, as ``run_experiments``
    does), then judge each experiment from its own smoke runs. Returns the verdicts and the runs."""
    by_exp = smoke_points(experiments, scale)
    points = {p.run_id: p for pts in by_exp.values() for p in pts}
    for exp in experiments:
        if not by_exp[exp.name]:
            echo(f"  {exp.name}: no training sweep at {scale} scale (its capacity probes are not part of a smoke run)")
    if points:
        echo(f"== smoke: {len(points)} runs of {STEPS} steps for {', '.join(e.name for e in experiments)}")
        run(list(points.values()), f"reproduce-{scale}-smoke", {"smoke": True, "steps": STEPS,
                                                               "experiments": [e.name for e in experiments]})
    runs = {r.run_id: r for r in store.runs(sorted(points))} if points else {}
    probes = store.probes()  # none: a smoke store holds no probes, so the clauses that read them are undecided
    verdicts = [e.judge([runs[p.run_id] for p in by_exp[e.name] if p.run_id in runs], probes, scale, every_budget=True)
                for e in experiments]
    return verdicts, list(runs.values())
