"""Branch points: a longer budget starts where a shorter run of the same trajectory left off.

Two runs that differ only in their budget (``train.epochs``), with the same peak rate and the same
warm-up in steps (``train.warmup_steps``), take identical steps (same initialisation, data order,
rates, evaluations and checkpoints) until the shorter one's schedule leaves the peak rate
(``TrainConfig.branch_step``: where a wsd decay begins). The shorter run saves its whole training
state there; the longer run, instead of repeating those steps, loads it and goes on. Its record is
the from-scratch run's within float rounding (tests/train/test_branch.py) and has the same run id:
the store cannot tell them apart, and ``metrics.branched_from`` says which it was.

Snapshots live in ``<cache>/branches/<trajectory>/<step>.pt``, about 1 MB for the default model; a
run's own mid-run checkpoints (saved every few minutes and when a segment ends, so that a run
longer than a segment resumes in the next) in ``<cache>/checkpoints/<run id>/<step>.pt``, in the
same form. A snapshot is deleted once a run has branched from it and finished, a checkpoint once
its run finished. The driver keeps both in the store as well (``evalsuite.snapshots``), so that a
rung continues its run in any checkout or machine that has the store, whatever its cache holds.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch

from evalsuite.config import RunConfig, run_id
from evalsuite.files import atomic_write

FOLDER = "branches"
CHECKPOINTS = "checkpoints"


class SegmentEnded(RuntimeError):
    """The segment's deadline passed mid-run: its checkpoint is kept and the next invocation resumes it."""


# A run saves its whole training state every CHECKPOINT_S seconds (and when the segment it runs in
# ends), so that a run longer than a segment continues in the next one (``$EVALSUITE_CHECKPOINT_S``).
CHECKPOINT_S = 600.0


def checkpoint_every() -> float:
    return float(os.environ.get("EVALSUITE_CHECKPOINT_S") or CHECKPOINT_S)


def segment_deadline() -> float | None:
    """The wall-clock time (``time.time()``) the driver's segment ends (``$EVALSUITE_DEADLINE``), if any."""
    value = os.environ.get("EVALSUITE_DEADLINE")
    return float(value) if value else None


def trajectory(config: RunConfig, total_steps: int) -> str:
    """What a run's steps up to its branch point depend on: everything but the budget and how the
    schedule ends (the warm-up enters as the number of steps it takes)."""
    data = config.as_dict()
    # plateau stops act only after ``plateau_after`` (past the shorter run's branch point): not on the shared steps
    train = {k: v for k, v in data["train"].items() if k not in ("epochs", "warmup_frac", "warmup_steps", "decay_frac",
                                                                   "plateau_window", "plateau_gain", "plateau_above",
                                                                   "plateau_after")}
    return run_id({**data, "train": {**train, "warmup": config.train.warmup(total_steps)}})


def folder(cache_dir, config: RunConfig, total_steps: int) -> Path | None:
    """Where this run's trajectory keeps its snapshots (None without a cache or a branch point)."""
    if not cache_dir or config.train.branch_step(total_steps) is None:
        return None
    return Path(cache_dir) / FOLDER / trajectory(config, total_steps)


def checkpoint_folder(cache_dir, config: RunConfig) -> Path | None:
    """Where this run keeps its own mid-run checkpoints (None without a cache)."""
    return None if not cache_dir else Path(cache_dir) / CHECKPOINTS / config.run_id


def clear(where: Path | None) -> None:
    """Delete a run's checkpoints (it finished)."""
    if where is not None and where.is_dir():
        for p in where.glob("*.pt"):
            p.unlink(missing_ok=True)
        try:
            where.rmdir()
        except OSError:
            pass


def latest(where: Path | None, up_to: int) -> Path | None:
    """The snapshot with the most steps, at most ``up_to``."""
    if where is None or not where.is_dir():
        return None
    steps = [int(p.stem) for p in where.glob("*.pt") if p.stem.isdigit() and int(p.stem) <= up_to]
    return where / f"{max(steps)}.pt" if steps else None


def save(state, where: Path) -> None:
    """Write ``state``'s (a ``TrainingState``) training state at its current step, atomically."""
    snapshot = {
        "run_id": state.config.run_id, "step": state.step, "model": state.model.state_dict(),
        "optimizer": state.optimizer.state_dict(), "shuffle": state.shuffle.get_state(), "order": state.order.cpu(),
        "rng": state.rng, "history": state.history, "best": state.best, "evals_without_gain": state.evals_without_gain,
        "losses": [float(x) for x in state.losses], "loss_value": state.loss_value,
    }
    where.mkdir(parents=True, exist_ok=True)
    atomic_write(where / f"{state.step}.pt", lambda f: torch.save(snapshot, f))


def restore(state, path: Path, resumed: bool = False) -> None:
    """Put a snapshot's training state into ``state`` (prepared: data, model, optimizer, schedule);
    ``resumed``: the run's own checkpoint (``metrics.resumed_from_step``), not a shorter run's."""
    snapshot = torch.load(path, map_location=state.device, weights_only=False)
    state.model.load_state_dict(snapshot["model"])
    state.optimizer.load_state_dict(snapshot["optimizer"])
    step = snapshot["step"]
    state.schedule.last_epoch = step
    for group, base, factor in zip(state.optimizer.param_groups, state.schedule.base_lrs, state.schedule.lr_lambdas):
        group["lr"] = base * factor(step)
    state.schedule._last_lr = [g["lr"] for g in state.optimizer.param_groups]
    state.shuffle.set_state(snapshot["shuffle"])
    state.order = snapshot["order"].to(state.staged.inputs.device)
    state.rng, state.history, state.best = snapshot["rng"], snapshot["history"], snapshot["best"]
    state.evals_without_gain, state.loss_value = snapshot["evals_without_gain"], snapshot["loss_value"]
    state.losses = [torch.tensor(x, device=state.device) for x in snapshot["losses"]]
    state.step = step
    if resumed:
        state.metrics.update(resumed_from_step=step)
    else:
        state.metrics.update(branched_from=snapshot["run_id"], branched_from_step=step)


def consumed(path: Path) -> None:
    """A run branched from ``path`` and finished: the snapshot has done its work."""
    try:
        os.unlink(path)
    except OSError:
        pass
