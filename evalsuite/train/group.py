"""Grouped training: runs that differ only in learning rate and seed, trained as one batched model.

Each member is an ordinary run (``train.loop.TrainingState``) with its own data (drawn from its seed), its own
initialisation, optimizer (AdamW moments and rate), schedule, gradient clip, evaluations, early
stopping, best checkpoint and record. Only the step is shared: the members' parameters are
stacked along a new leading axis, one ``torch.func.vmap`` of the model computes every member's
loss on its own batch, and ``sum(losses).backward()`` gives each member exactly its own gradient
(the members never mix: d sum / d loss_i = 1). Each member's optimizer then steps its own
parameters. A member trains to the same metrics as alone, within float tolerance
(tests/train/test_group.py).

Why: on a GPU a model of this size leaves most of the device idle and its step is bound by kernel
launches; a group of G runs issues about the launches of one. On CPU the batched step measured
slower than G steps alone (README, "Grouped training"), so ``--group auto`` groups on CUDA only.

A member that reaches its target or runs out of patience leaves the group; one that diverges is
recorded as diverged and leaves. If the batched step itself fails (out of memory, an operation
vmap cannot batch, a feature map drawing random numbers inside its forward), every member still
in the group is trained again alone from its start, with a warning in its record.
"""
from __future__ import annotations

import copy
import sys
import time
import warnings

import torch
from torch.func import functional_call, vmap

from evalsuite.config import RunConfig, run_id

from .data import Graded
from .loop import Trained, TrainingState, make_optimizer, progress_bar, run_alone, train_one, train_step, training_loss

# vmap has no batching rule for the CPU flash-attention kernel and loops over the members there
# (correct, only slower); its warning says so once per call site
_NO_BATCH_RULE = "There is a performance drop because we have not yet implemented the batching rule"


def group_key(config: RunConfig) -> str | None:
    """Configurations with the same key differ only in ``train.lr`` and ``seed`` and may train as
    one group; ``None`` for a configuration that trains alone (``train.compile``: one compiled
    model per run)."""
    if config.train.compile:
        return None
    rest = config.as_dict()
    rest = {**rest, "train": {k: v for k, v in rest["train"].items() if k != "lr"}}
    rest.pop("seed", None)
    return run_id(rest)


def train_group(configs: list[RunConfig], device: torch.device, progress: bool | None = None,
                cache_dir=None, decide: bool = False) -> list[Trained]:
    """Train ``configs`` (same ``group_key``) together; one ``Trained`` per config, in order.
    ``decide``: first time a few steps of the batched step against the members' own (``pays``)
    and train them one after another where that is faster (``--group auto``). Failures are
    returned as records, never raised (Ctrl-C and SIGTERM are)."""
    keys = {group_key(c) for c in configs}
    if len(keys) != 1 or None in keys:
        raise ValueError("a group's configurations must differ only in train.lr and seed (and not train.compile)")
    members = [TrainingState(c, device) for c in configs]
    for m in members:
        try:
            m.prepare(cache_dir)
        except Exception as exc:  # noqa: BLE001 - this member's failure; the others train
            m.fail(exc)
    active = [m for m in members if not m.finished]
    if decide and len(active) > 1:
        calibration = pays(active)
        for m in active:
            m.metrics["group_calibration"] = calibration
        if not calibration["grouped"]:
            for m in active:  # one after another, each as train_one would
                m.train_start = time.perf_counter()
                try:
                    run_alone(m, False)
                except Exception as exc:  # noqa: BLE001 - this member's failure; the others train
                    m.fail(exc)
            return [m.trained() for m in members]
    for m in active:
        m.train_start = time.perf_counter()  # the members' set-up ran one after another
        m.metrics["group_size"] = len(configs)
    if active:
        first = active[0]
        name = f"group of {len(active)}: {first.config.model.name} on {first.config.task.name}"
        bar = progress_bar(first.total_steps, sys.stderr.isatty() if progress is None else progress, name)
        try:
            _train_together(active, bar)
        except Exception as exc:  # noqa: BLE001 - the batched step failed: train the rest alone
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            for i, m in enumerate(members):
                if m.finished:
                    continue
                alone = train_one(m.config, device, progress=False, cache_dir=cache_dir)
                alone.record.warnings.append(f"grouped training failed ({reason}); this run was trained alone")
                members[i] = alone
        bar.close()
    return [m if isinstance(m, Trained) else m.trained() for m in members]


class _Loss(torch.nn.Module):
    """``training_loss`` of a model as its forward, for ``functional_call``."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, inputs, index, targets):
        return training_loss(self.model, Graded(inputs, index, targets))


class BatchedStep:
    """One optimisation step of several models of one architecture as one vmapped model: their
    parameters stacked on a new leading axis, one ``vmap`` of the loss, one backward, then each
    model's own gradient clip and optimizer step."""

    def __init__(self, template: torch.nn.Module):
        self.skeleton = _Loss(copy.deepcopy(template))  # its own tensors are never read: functional_call swaps them
        self.names = [n for n, _ in template.named_parameters()]
        self.buffer_names = [n for n, _ in template.named_buffers()]
        self.tensors: dict[int, tuple[dict, dict]] = {}  # each model's own tensors, looked up once

        def member_loss(params, buffers, inputs, index, targets):
            return functional_call(self.skeleton, ({f"model.{n}": p for n, p in params.items()},
                                                   {f"model.{n}": b for n, b in buffers.items()}), (inputs, index, targets))

        self.loss = vmap(member_loss)

    def __call__(self, models, optimizers, batches: list[Graded], clips: list[float], autocast) -> torch.Tensor:
        """Step every model on its own batch; the losses ``[G]``, detached, on the device."""
        for m in models:
            if id(m) not in self.tensors:  # optimizers and resampling update these in place
                self.tensors[id(m)] = (dict(m.named_parameters()), dict(m.named_buffers()))
        own = [self.tensors[id(m)] for m in models]
        params = {n: torch.stack([t[0][n] for t in own]) for n in self.names}                 # [G, ...] each
        buffers = {n: torch.stack([t[1][n] for t in own]) for n in self.buffer_names}
        inputs, index, targets = (torch.stack([getattr(b, f) for b in batches])          # [G, B, T] / [G, B, K]
                                  for f in ("inputs", "index", "targets"))
        for opt in optimizers:
            opt.zero_grad(set_to_none=True)
        with warnings.catch_warnings(), autocast:
            warnings.filterwarnings("ignore", message=_NO_BATCH_RULE)
            losses = self.loss(params, buffers, inputs, index, targets)                    # [G]
        losses.sum().backward()
        for m, opt, clip in zip(models, optimizers, clips):
            if clip > 0:
                torch.nn.utils.clip_grad_norm_(m.parameters(), clip)
            opt.step()
        return losses.detach()


def _train_together(active: list[TrainingState], bar) -> None:
    """Step every member of ``active`` through one batched step until each has finished."""
    step = BatchedStep(active[0].model)
    while active:
        batches = [m.next_batch() for m in active]
        losses = step([m.model for m in active], [m.optimizer for m in active], batches,
                      [m.train.grad_clip for m in active], active[0].autocast())
        for i, m in enumerate(active):
            m.losses.append(losses[i])
        for m in active:
            try:
                m.end_step()
                if m.finished:
                    m.finish()
            except Exception as exc:  # noqa: BLE001 - diverged, or its evaluation failed: it leaves
                m.fail(exc)
        bar.update(1)
        active = [m for m in active if not m.finished]


CALIBRATION_STEPS = 3


def pays(members: list[TrainingState]) -> dict:
    """Whether the batched step beats the members' steps one after another here: a few steps of
    each, timed on copies of the members' models and optimizers after a warm-up step (the members
    and the random state are untouched). ``{"grouped": bool, "grouped_steps_per_s", "alone_steps_per_s"}``
    in member-steps per second."""
    first = members[0]
    rng = torch.get_rng_state()
    models = [copy.deepcopy(m.model) for m in members]
    optimizers = [make_optimizer(model, m.train, m.device) for model, m in zip(models, members)]
    batches = [m.staged[:m.train.batch_size].to(m.device) for m in members]
    clips = [m.train.grad_clip for m in members]
    sync = torch.cuda.synchronize if first.device.type == "cuda" else (lambda: None)

    def timed(fn) -> float:
        fn()  # warm-up (lazy initialisation, allocations)
        sync()
        start = time.perf_counter()
        for _ in range(CALIBRATION_STEPS):
            fn()
        sync()
        return len(members) * CALIBRATION_STEPS / (time.perf_counter() - start)

    try:
        step = BatchedStep(models[0])
        grouped = timed(lambda: step(models, optimizers, batches, clips, first.autocast()))
        alone = timed(lambda: [train_step(mod, opt, b, c, first.autocast())
                               for mod, opt, b, c in zip(models, optimizers, batches, clips)])
    finally:
        torch.set_rng_state(rng)
    return {"grouped": grouped > alone, "grouped_steps_per_s": grouped, "alone_steps_per_s": alone}


__all__ = ["group_key", "train_group"]
