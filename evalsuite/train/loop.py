"""The training loop of one run: a ``RunConfig`` in, a ``Trained`` (its ``RunRecord``, and for a
finished run the best checkpoint and the test batch) out.

Loss and logits are computed only at graded positions: the hidden states there are gathered
before the output head, which dominates the cost at large vocabularies. The trainer knows nothing
of analyses or stores: ``evalsuite.pipeline`` analyses and persists what it returns.
"""
from __future__ import annotations

import copy
import math
import sys
import time
import types
import traceback
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from evalsuite.config import RunConfig, TrainConfig
from evalsuite.models.feature_maps import FeatureMap
from evalsuite.models.state import state_size
from evalsuite.records import RunRecord, Status
from evalsuite.tasks import IGNORE, Batch
from evalsuite.tasks import readers
from evalsuite.tasks.base import FLOOR_WARNING, long_only_warning, majority_rate

from . import branch
from .branch import SegmentEnded, checkpoint_every, segment_deadline  # noqa: F401 - part of this module's interface
from .schedule import convergence, lr_factor  # noqa: F401 - part of this module's interface
from .data import Graded, make_data, stage
from .evaluate import autocast_for, evaluate, grader, segment_accuracies
from .progress import EXPECT_AFTER, expected_line, progress_bar


class Diverged(RuntimeError):
    pass


@dataclass
class Trained:
    """What training returns: the record, and for a finished run the model (best checkpoint) and
    the test batch the pipeline's analyses read."""

    record: RunRecord
    model: torch.nn.Module | None = field(default=None, repr=False)
    test: Batch | None = field(default=None, repr=False)


def training_loss(model, batch: Graded) -> torch.Tensor:
    """Mean cross-entropy over the graded positions of ``batch``."""
    hidden = model.hidden(batch.inputs)                                              # [B, T, d]
    picked = hidden.gather(1, batch.index[..., None].expand(-1, -1, hidden.shape[-1]))  # [B, K, d]
    logits = model.head(picked).float()                                              # [B, K, V]
    return F.cross_entropy(logits.flatten(0, 1), batch.targets.flatten(), ignore_index=IGNORE)


def make_optimizer(model, train: TrainConfig, device: torch.device) -> torch.optim.Optimizer:
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": train.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    extra = {"fused": True} if device.type == "cuda" else {"foreach": True}
    return torch.optim.AdamW(groups, lr=train.lr, betas=(0.9, 0.98), **extra)


def train_step(model, optimizer, batch: Graded, grad_clip: float, autocast) -> torch.Tensor:
    """One optimisation step on the graded positions of ``batch``; returns the loss as a detached
    0-d tensor on the model's device (reading it is a host sync: the loop does so only at
    evaluation points)."""
    with autocast:
        loss = training_loss(model, batch)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    return loss.detach()


def first_non_finite(losses: list[torch.Tensor]) -> int | None:
    """Index of the first non-finite loss of ``losses`` (one host sync for all of them), or None."""
    if not losses:
        return None
    bad = ~torch.isfinite(torch.stack(losses).float())
    return int(bad.int().argmax()) if bool(bad.any()) else None


def _compiled_first_step(run: "TrainingState", batch: Graded):
    """The first step of ``run`` through ``torch.compile``, timed (``compile_time_s``: compilation
    plus one step); where compilation fails, a warning and the same step in eager mode. Returns
    what the later steps call."""
    model, device = run.model, run.device
    start = time.perf_counter()
    try:
        # the trunk only: the head runs on gathered positions
        compiled = types.SimpleNamespace(hidden=torch.compile(model.hidden), head=model.head, parameters=model.parameters)
        run.losses.append(train_step(compiled, run.optimizer, batch, run.train.grad_clip, run.autocast()))
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        run.metrics["compile_time_s"] = time.perf_counter() - start
        return compiled
    except Exception as exc:  # no C++ compiler, an unsupported op, ...: train eagerly
        message = f"train.compile: torch.compile failed ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}); trained eagerly"
        run.warnings.append(message)
        run.optimizer.zero_grad(set_to_none=True)
        run.losses.append(train_step(model, run.optimizer, batch, run.train.grad_clip, run.autocast()))
        return model


def resample_feature_maps(model: torch.nn.Module) -> None:
    """Redraw every random feature map of ``model`` (a no-op for deterministic maps)."""
    for module in model.modules():
        if isinstance(module, FeatureMap):
            module.resample()


def train_one(config: RunConfig, device: torch.device, progress: bool | None = None, cache_dir=None) -> Trained:
    """Train and test one configuration. Failures are returned, not raised (Ctrl-C and SIGTERM are
    raised: the caller records the run as interrupted)."""
    run = TrainingState(config, device)
    try:
        run.prepare(cache_dir)
        run_alone(run, progress)
    except Exception as exc:  # noqa: BLE001 - recorded in the store; the caller decides the exit status
        run.fail(exc)
    return run.trained()


def run_alone(run: "TrainingState", progress: bool | None = None) -> None:
    """The loop of one prepared run, step by step, to its test. Raises what a step raises."""
    bar = progress_bar(run.total_steps, sys.stderr.isatty() if progress is None else progress,
                       f"{run.config.model.name} on {run.config.task.name}", initial=run.step)
    stepper = run.model  # what the steps call: the model, or its compiled form (train.compile)
    first, began, start = True, time.perf_counter(), run.step
    while not run.finished:
        batch = run.next_batch()
        if first and run.train.compile:
            stepper = _compiled_first_step(run, batch)
        else:
            run.losses.append(train_step(stepper, run.optimizer, batch, run.train.grad_clip, run.autocast()))
        first = False
        run.end_step()
        bar.update(1)
        if run.step - start == EXPECT_AFTER and not bar.disable:
            bar.write(expected_line(run.total_steps - run.step, EXPECT_AFTER, time.perf_counter() - began, run.step))
        if run.history and run.history[-1]["step"] == run.step:
            bar.set_postfix(loss=f"{run.loss_value:.3f}", val_acc=f"{run.history[-1]['val_accuracy']:.3f} "
                            f"(floor {run.floor_reading()[0]:.3f}, target {run.train.target_accuracy:g})")
    bar.close()
    run.finish()


class TrainingState:
    """One run's training state: its data, model, optimizer, schedule, validation history, best
    checkpoint and record. ``train_one`` drives one alone; ``train.group.train_group`` drives several
    through one batched step. Only the step differs: everything a run decides (its batches, rate,
    evaluations, early stopping, test) is decided here, the same way in both.

    Use: ``prepare()``; then per step ``next_batch()``, append the step's loss to ``losses``,
    ``end_step()``, until ``finished``; then ``finish()``. ``fail(exc)`` records an exception."""

    def __init__(self, config: RunConfig, device: torch.device):
        self.config, self.device = config, device
        self.train, self.seed = config.train, config.seed
        self.metrics: dict[str, Any] = {}
        self.history: list[dict[str, float]] = []
        self.warnings: list[str] = []
        self.status, self.error = Status.RUNNING, None
        self.model = self.test = None
        self.step, self.loss_value, self.finished = 0, float("nan"), False
        self.losses: list[torch.Tensor] = []  # since the last evaluation, on the device (no host sync per step)
        self.start = time.perf_counter()

    def prepare(self, cache_dir=None) -> None:
        """Data, model (initialised from the run's seed), optimizer and schedule."""
        torch.manual_seed(self.seed)
        begin = time.perf_counter()
        data, self.eval_sets = make_data(self.config.task, self.train, self.seed, cache_dir=cache_dir)
        self.data, self.tasks = data, self.config.task.tasks
        self.grader = grader(self.tasks)  # RegBench accepts several answers at a position, in every split
        self.slice_keys = tuple(dict.fromkeys(k for t in self.tasks for k in t.slice_keys))
        # a mixture's validation accuracy per segment (each D's learning curve), by the keys its segments differ in
        self.val_keys = tuple(k for k in self.slice_keys if len({getattr(t.params, k, None) for t in self.tasks}) > 1)
        self.model = self.config.model.build(self.config.task.vocab_size).to(self.device)
        self.rng = torch.get_rng_state()  # what random feature maps draw from (resample)
        self.seq_len = data["train"].inputs.shape[1]
        self.metrics.update(parameters=self.model.num_parameters(), state_size=self.model.state_size(self.seq_len),
                            seq_len=self.seq_len)
        self.batches_per_epoch = max(1, len(data["train"]) // self.train.batch_size)
        self.total_steps = max(1, int(round(self.train.epochs * self.batches_per_epoch)))
        self.optimizer = make_optimizer(self.model, self.train, self.device)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lr_factor(self.total_steps, self.train.warmup_frac, self.train.schedule, self.train.decay_frac,
                                      self.train.warmup(self.total_steps)))
        self.shuffle = torch.Generator().manual_seed(self.seed)
        self.staged = stage(Graded.of(data["train"]), self.device)
        self.metrics["time_data_s"] = time.perf_counter() - begin  # generation and staging (model build included)
        self.eval_time = 0.0  # validation passes, within train_time_s
        self.order = torch.empty(0, dtype=torch.long)
        self.best = {"accuracy": -1.0, "step": 0, "state": None}
        self.evals_without_gain = 0
        # a shorter run of this trajectory may have saved the state this one reaches at its branch point
        self.branch_step = self.train.branch_step(self.total_steps)
        self.branches = branch.folder(cache_dir, self.config, self.total_steps)
        self.branched = branch.latest(self.branches, self.branch_step or 0)
        if self.branched is not None:
            branch.restore(self, self.branched)
        # this very run may have been stopped mid-way (a segment's end): its own checkpoint goes further
        self.checkpoints = branch.checkpoint_folder(cache_dir, self.config)
        own = branch.latest(self.checkpoints, self.total_steps)
        if own is not None and int(own.stem) > self.step:
            branch.restore(self, own, resumed=True)
        self.next_checkpoint = time.monotonic() + checkpoint_every()
        self.deadline = segment_deadline()
        self.plateau = False
        self.start_step = self.step
        self.model.train()
        self.train_start = time.perf_counter()

    def autocast(self):
        return autocast_for(self.device, self.train.precision)

    def next_batch(self) -> Graded:
        """The training batch of this step (a fresh shuffle every epoch), on the device."""
        if self.step % self.batches_per_epoch == 0:
            self.order = torch.randperm(len(self.staged), generator=self.shuffle).to(self.staged.inputs.device)
        i, size = self.step % self.batches_per_epoch, self.train.batch_size
        return self.staged[self.order[i * size:(i + 1) * size]].to(self.device)

    def end_step(self) -> None:
        """After the optimizer step: advance the schedule, redraw random features when due, and at
        evaluation points check the losses, validate, keep the best checkpoint and decide whether
        to stop. Raises ``Diverged``."""
        self.schedule.step()
        self.step += 1
        if self.train.resample_every and self.step % self.train.resample_every == 0:
            self.resample()  # between steps: never inside a sequence
        if self.step % self.train.eval_every and self.step != self.total_steps:
            self.save_branch()
            self.save_checkpoint()
            return
        bad = first_non_finite(self.losses)  # the loop's one read of the losses
        if bad is not None:
            raise Diverged(f"training loss became {float(self.losses[bad])} at step {self.step - len(self.losses) + bad + 1}")
        self.loss_value, self.losses = float(self.losses[-1]), []
        begin = time.perf_counter()
        val = evaluate(self.model, self.data["val"], self.device, self.train.precision, task=self.grader, slice_keys=self.val_keys)
        self.eval_time += time.perf_counter() - begin
        self.history.append({"step": self.step, "train_loss": self.loss_value, "val_loss": val["loss"],
                             "val_accuracy": val["accuracy"], "lr": self.schedule.get_last_lr()[0],
                             **(segment_accuracies(val["slices"], self.val_keys) if self.val_keys else {})})
        # ties go to the earlier checkpoint, unless the run trains on past its target (then the later)
        better = val["accuracy"] > self.best["accuracy"] or (not self.train.stop_at_target
                                                            and val["accuracy"] == self.best["accuracy"])
        if better:
            self.best = {"accuracy": val["accuracy"], "step": self.step, "state": copy.deepcopy(self.model.state_dict())}
            self.evals_without_gain = 0
        else:
            self.evals_without_gain += 1
        self.plateau = self.plateaued()
        self.finished = (self.step >= self.total_steps
                         or (self.train.stop_at_target and val["accuracy"] >= self.train.target_accuracy)
                         or bool(self.train.patience and self.evals_without_gain >= self.train.patience)
                         or self.plateau)
        self.save_branch()
        self.save_checkpoint()

    def plateaued(self) -> bool:
        """No validation gain of ``plateau_gain`` over the last ``plateau_window`` passes, at or above
        ``plateau_above`` (``TrainConfig``)."""
        w, t = self.train.plateau_window, self.train
        if not w or len(self.history) <= w or self.step <= t.plateau_after:
            return False
        accs = [h["val_accuracy"] for h in self.history]
        return max(accs) >= t.plateau_above and max(accs[-w:]) - max(accs[:-w]) < t.plateau_gain

    def save_checkpoint(self) -> None:
        """Every ``checkpoint_every()`` seconds, and when the segment's deadline has passed (then
        raising ``SegmentEnded``), save this run's whole training state, so that it resumes there."""
        if self.checkpoints is None or self.finished:
            return
        now, late = time.monotonic(), self.deadline is not None and time.time() >= self.deadline
        if now >= self.next_checkpoint or late:
            branch.save(self, self.checkpoints)
            self.next_checkpoint = now + checkpoint_every()
        if late:
            raise SegmentEnded(f"the segment ended at step {self.step:,} of {self.total_steps:,}; its checkpoint is kept "
                               "and the next invocation resumes it")

    def save_branch(self) -> None:
        """At the branch point, save the state a longer run of this trajectory would reach here."""
        if self.branches is not None and self.step == self.branch_step and not self.finished:
            branch.save(self, self.branches)

    def resample(self) -> None:
        """Redraw the random feature maps from this run's own random stream, so that a run draws
        the same features whether it trains alone or in a group."""
        outer = torch.get_rng_state()
        torch.set_rng_state(self.rng)
        try:
            resample_feature_maps(self.model)
        finally:
            self.rng = torch.get_rng_state()
            torch.set_rng_state(outer)

    def slice_floors(self, slices: list[dict], batch) -> list[dict]:
        """Each slice with its own ``floor``: the best no-memory reader on that slice's examples
        (the floor at D = 4 is not the floor at D = 32, and every accuracy plot draws its own)."""
        task, train = self.tasks[0], self.data["train"]
        if getattr(self, "_fitted", None) is None:
            self._fitted = readers.fit(train)
        fitted = self._fitted
        out = []
        for s in slices:
            keys = [k for k in self.slice_keys if k in s and k in batch.meta]
            pick = torch.ones(len(batch), dtype=torch.bool)
            for k in keys:
                pick &= batch.meta[k].cpu() == s[k]
            part = batch[pick.nonzero()[:, 0]] if keys else batch
            out.append({**s, "floor": readers.floor(task, part, train, fitted)[0] if len(part) else None})
        return out

    def floor_reading(self) -> tuple[float, str]:
        """(floor, reader) on this run's test split: the best reader with no memory of what the task
        tests (``tasks.readers.floor``), computed once (the progress bar may ask before the test)."""
        if getattr(self, "_floor", None) is None:
            floor, reader, _ = readers.floor(self.tasks[0], self.data["test"], self.data["train"])
            self._floor = (floor, reader)
        return self._floor

    def finish(self) -> None:
        """Test the best checkpoint on the test split and every eval segment; fill the metrics."""
        train_time = time.perf_counter() - self.train_start
        model, data, train, step = self.model, self.data, self.train, self.step
        if self.best["state"] is not None:
            model.load_state_dict(self.best["state"])  # report the checkpoint that validated best
        self.best["state"] = None
        begin = time.perf_counter()
        test = evaluate(model, data["test"], self.device, train.precision, slice_keys=self.slice_keys, task=self.grader)
        slices = [{"split": "test", **s} for s in self.slice_floors(test.get("slices", []), data["test"])]
        for i, eval_set in enumerate(self.eval_sets):
            ev = evaluate(model, eval_set, self.device, train.precision, slice_keys=self.slice_keys, task=self.grader)
            self.metrics[f"eval_{i}_accuracy"] = ev["accuracy"]
            # each test length or pair count has its own floor (a mixed-D run is read at each D)
            self.metrics[f"eval_{i}_floor"] = readers.floor(self.tasks[0], eval_set, self.data["train"])[0]
            slices.extend({"split": f"eval_{i}", **s} for s in self.slice_floors(
                ev.get("slices") or [{"accuracy": ev["accuracy"], "graded": ev["graded"]}], eval_set))
        head_task = self.tasks[0]
        floor, reader = self.floor_reading()
        if floor > FLOOR_WARNING:
            self.warnings.append(f"the floor is {floor:.3f} ({reader}): a reader with no memory of what {head_task.name} "
                                 f"tests scores above {FLOOR_WARNING} here, so this setting leaves little to learn")
        self.warnings.extend(filter(None, [long_only_warning(self.config.task.train_tasks)]))  # Zoology issue 24
        test_time = time.perf_counter() - begin
        self.metrics.update(
            **({"tvd": test["tvd"], "tvd_floor": self.grader.tvd_floor(data["test"])} if "tvd" in test else {}),
            accuracy=test["accuracy"], loss=test["loss"], graded=test["graded"], majority_rate=majority_rate(data["test"]),
            context_chance=head_task.context_chance(data["test"]), chance_rule=head_task.chance_rule,
            floor=floor, floor_reader=reader,
            val_accuracy=self.best["accuracy"], best_step=self.best["step"], steps=step, budget_steps=self.total_steps,
            **convergence(self.history, self.total_steps, train.target_accuracy if train.stop_at_target else math.inf,
                          plateau=self.plateau),
            train_loss=self.loss_value,
            train_time_s=train_time, steps_per_s=(step - self.start_step) / max(train_time, 1e-9), slices=slices,
            time_eval_s=self.eval_time, time_steps_s=train_time - self.eval_time, time_test_s=test_time,
            state_bytes_fp32=state_size(model, self.seq_len)["bytes"])
        self.test = data["test"]
        self.status, self.finished = Status.DONE, True
        if self.branched is not None:
            branch.consumed(self.branched)
        branch.clear(self.checkpoints)  # finished: nothing to resume
        self.release()

    def fail(self, exc: Exception) -> None:
        if isinstance(exc, SegmentEnded):
            self.status, self.error = Status.INTERRUPTED, str(exc)
        elif isinstance(exc, Diverged):
            self.status, self.error = Status.DIVERGED, str(exc)
        else:
            self.status, self.error = Status.FAILED, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}"
        self.finished, self.model, self.test = True, None, None
        self.release()

    def release(self) -> None:
        """Drop what only training needs (optimizer moments, training data, the checkpoint)."""
        self.optimizer = self.schedule = self.staged = None
        self.losses, self.best["state"] = [], None
        if hasattr(self, "data"):
            self.data = {"test": self.data["test"]} if self.status is Status.DONE else {}

    def trained(self) -> Trained:
        self.metrics["wall_time_s"] = time.perf_counter() - self.start
        record = RunRecord(run_id=self.config.run_id, config=self.config.as_dict(), status=self.status, error=self.error,
                           metrics=self.metrics, history=self.history, warnings=self.warnings)
        return Trained(record, self.model, self.test)


