"""Training and evaluation of one run: data from a task, a model from the zoo, a ``RunRecord`` out.

Loss and logits are computed only at graded positions: the hidden states there are gathered
before the output head, which dominates the cost at large vocabularies. The trainer knows nothing
of analyses or stores: ``evalsuite.pipeline`` analyses and persists what it returns.
"""
from __future__ import annotations

import contextlib
import copy
import math
import sys
import time
import types
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn.functional as F

from evalsuite import config as cfg
from evalsuite.analysis.state import state_size
from evalsuite.models.feature_maps import FeatureMap
from evalsuite.records import RunRecord, Status
from evalsuite.tasks import IGNORE, Batch
from evalsuite.tasks.base import majority_rate

SPLITS = {"train": 0, "val": 1, "test": 2}


class Diverged(RuntimeError):
    pass


@dataclass
class Trained:
    """What training returns: the record, and for a finished run the model (best checkpoint) and
    the test batch the pipeline's analyses read."""

    record: RunRecord
    model: torch.nn.Module | None = field(default=None, repr=False)
    test: Batch | None = field(default=None, repr=False)


MAX_SEGMENTS = cfg.MAX_SEGMENTS


def split_seed(seed: int, split: str, segment: int = 0) -> int:
    """Train, validation and test data (and each segment of a mixture) of every run seed come from
    disjoint generator seeds."""
    return (3 * seed + SPLITS[split]) * MAX_SEGMENTS + segment


def make_data(task_section: dict, train: cfg.TrainConfig, seed: int, splits=tuple(SPLITS),
              cache_dir=None) -> tuple[dict[str, Batch], list[Batch], list]:
    """Train/val/test splits of the training mixture (or those in ``splits``), plus one test set
    per eval segment. ``cache_dir``: where slow generators may cache (see ``Task.generate``)."""
    objs = cfg.task_objects(task_section)
    mixture = objs["train"]
    if len(mixture) + len(objs["eval"]) > MAX_SEGMENTS:
        raise ValueError(f"at most {MAX_SEGMENTS} segments are supported")
    total = sum(share for _, share in mixture)
    data = {}
    for split in splits:
        n = getattr(train, f"num_{split}")
        counts = [max(1, round(n * share / total)) for _, share in mixture]
        data[split] = Batch.concat([task.generate(c, split_seed(seed, split, i), cache_dir)
                                    for i, ((task, _), c) in enumerate(zip(mixture, counts))])
    evals = [task.generate(n, split_seed(seed, "test", len(mixture) + i), cache_dir)
             for i, (task, n) in enumerate(zip(objs["eval"], cfg.eval_sizes(task_section, train.num_test)))]
    return data, evals, [t for t, _ in mixture] + objs["eval"]


def autocast_for(device: torch.device, precision: str):
    if precision == "bf16" or (precision == "auto" and device.type == "cuda"):
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


@dataclass
class Graded:
    """A training split as the loss reads it: ``inputs [N, T]``, and per example the positions of
    its graded targets, in order (``index [N, K]``), and those targets (``targets [N, K]``). K is
    the most graded positions any example of the split has; an example with fewer is padded with
    ungraded positions, whose target is IGNORE.

    Built once per split on the host, so that the loss gathers a fixed K positions per example: no
    boolean mask whose size the host must read (a sync per step on CUDA), a shape ``vmap`` can
    batch (grouped training), and the output head on K positions instead of T (MQAR: 8 of 64)."""

    inputs: torch.Tensor
    index: torch.Tensor
    targets: torch.Tensor

    @classmethod
    def of(cls, batch: Batch) -> "Graded":
        ungraded = (batch.targets == IGNORE).to(torch.uint8)
        K = max(1, int((1 - ungraded).sum(1).max()))
        index = ungraded.argsort(dim=1, stable=True)[:, :K]                       # graded positions first
        return cls(batch.inputs, index, batch.targets.gather(1, index))

    def __len__(self) -> int:
        return len(self.inputs)

    def __getitem__(self, rows) -> "Graded":
        return Graded(self.inputs[rows], self.index[rows], self.targets[rows])

    def to(self, device) -> "Graded":
        return Graded(*(t.to(device, non_blocking=True) for t in (self.inputs, self.index, self.targets)))


def training_loss(model, batch: Graded) -> torch.Tensor:
    """Mean cross-entropy over the graded positions of ``batch``."""
    hidden = model.hidden(batch.inputs)                                              # [B, T, d]
    picked = hidden.gather(1, batch.index[..., None].expand(-1, -1, hidden.shape[-1]))  # [B, K, d]
    logits = model.head(picked).float()                                              # [B, K, V]
    return F.cross_entropy(logits.flatten(0, 1), batch.targets.flatten(), ignore_index=IGNORE)


@torch.no_grad()
def evaluate(model, data: Batch, device: torch.device, precision: str = "auto", batch_size: int = 256,
             slice_keys: tuple[str, ...] = ()) -> dict:
    """Accuracy and mean loss over the scored positions of ``data``; with ``slice_keys``, also
    accuracy per value of that per-example metadata (``slices``)."""
    was_training = model.training
    model.eval()
    correct, counts, losses = [], [], []
    batch_size = cfg.eval_batch_size(data.inputs.shape[1], batch_size)  # long segments: fewer examples a batch
    for start in range(0, len(data), batch_size):
        batch = data[start:start + batch_size].to(device)
        mask = batch.score_mask
        with autocast_for(device, precision):
            hidden = model.hidden(batch.inputs)[mask]
            logits = model.head(hidden).float()
        target = batch.targets[mask]
        losses.append(F.cross_entropy(logits, target, reduction="sum").item() if target.numel() else 0.0)
        rows = mask.nonzero()[:, 0]  # example of each scored position
        hits = (logits.argmax(-1) == target).long()
        correct.append(torch.zeros(len(batch), dtype=torch.long, device=device).index_add_(0, rows, hits).cpu())
        counts.append(mask.sum(1).cpu())
    model.train(was_training)
    correct, counts = torch.cat(correct), torch.cat(counts)
    total = int(counts.sum())
    out = {"accuracy": int(correct.sum()) / max(total, 1), "loss": sum(losses) / max(total, 1), "graded": total}
    keys = [k for k in slice_keys if k in data.meta]
    if keys:
        groups: dict[tuple, list[int]] = {}
        for i, values in enumerate(zip(*(data.meta[k].tolist() for k in keys))):
            groups.setdefault(values, []).append(i)
        out["slices"] = []
        for values, idx in sorted(groups.items()):
            c, n = int(correct[idx].sum()), int(counts[idx].sum())
            out["slices"].append({**dict(zip(keys, values)), "accuracy": c / max(n, 1), "graded": n})
    return out


# A run that misses its target is "undertrained" when the best validation accuracy of the last
# quarter of its budget beats everything before by at least this much: it was still learning.
UNDERTRAINED_WINDOW = 0.25
UNDERTRAINED_GAIN = 0.01


def convergence(history: list[dict], budget_steps: int, target: float) -> dict:
    """``{"stopped": "target" | "budget" | "patience", "undertrained": bool, "last_quarter_gain": float}``
    from a run's validation history (``step``, ``val_accuracy``), by the rule above."""
    if not history:
        return {"stopped": "budget", "undertrained": True, "last_quarter_gain": math.nan}
    last = history[-1]
    if last["val_accuracy"] >= target:
        return {"stopped": "target", "undertrained": False, "last_quarter_gain": 0.0}
    if last["step"] < budget_steps:  # stopped early without reaching the target
        return {"stopped": "patience", "undertrained": False, "last_quarter_gain": 0.0}
    cut = budget_steps * (1 - UNDERTRAINED_WINDOW)
    before = [h["val_accuracy"] for h in history if h["step"] <= cut]
    after = [h["val_accuracy"] for h in history if h["step"] > cut]
    if not before or not after:  # too few validation passes to tell: assume it was still learning
        return {"stopped": "budget", "undertrained": True, "last_quarter_gain": math.nan}
    gain = max(after) - max(before)
    return {"stopped": "budget", "undertrained": gain >= UNDERTRAINED_GAIN, "last_quarter_gain": gain}


def convergence_note(metrics: dict) -> str:
    """One line on how a run ended, for the CLI summary and the reports."""
    stopped, gain = metrics.get("stopped"), metrics.get("last_quarter_gain")
    acc, floor = metrics.get("accuracy"), metrics.get("context_chance")
    if stopped is None:
        return ""
    if stopped == "target":
        return f"reached the target validation accuracy at step {metrics.get('best_step')}"
    if stopped == "patience":
        return f"stopped early: validation accuracy stopped improving (best at step {metrics.get('best_step')})"
    if metrics.get("undertrained"):
        rise = f" by {gain:+.3f}" if isinstance(gain, float) and math.isfinite(gain) else ""
        return (f"UNDERTRAINED: validation accuracy still rose{rise} in the last quarter of the budget, so this is "
                f"not the model's limit (more train.epochs may change it)")
    note = f"budget spent; validation accuracy flat over its last quarter ({gain:+.3f})" if isinstance(gain, float) else "budget spent"
    if acc is not None and floor is not None and acc < floor + 0.05:
        note += ("; at the chance floor, where MQAR models often plateau and then jump: calling this a failure needs "
                 "a learning-rate sweep, two seeds and 4x the budget (evalsuite reproduce does that)")
    return note


def lr_factor(total_steps: int, warmup_frac: float, schedule: str = "wsd", decay_frac: float = 0.2) -> Callable[[int], float]:
    """Learning-rate factor per step: linear warm-up, then ``schedule`` (down to 10% at the end)."""
    warmup = int(total_steps * warmup_frac)
    decay_start = total_steps - int(total_steps * decay_frac)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        if schedule == "constant":
            return 1.0
        if schedule == "wsd":  # warm-up, stable, decay: the peak rate until the last decay_frac
            if step < decay_start:
                return 1.0
            return 1.0 - 0.9 * min(1.0, (step - decay_start) / max(1, total_steps - decay_start))
        progress = (step - warmup) / max(1, total_steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))

    return factor


def make_optimizer(model, train: cfg.TrainConfig, device: torch.device) -> torch.optim.Optimizer:
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


STAGE_FRACTION = 0.25  # stage the data on a GPU when it takes at most this share of the free memory


def stage(data: Graded, device: torch.device) -> Graded:
    """``data`` moved to ``device`` once, where it fits (CUDA); else as it is (batches then move one
    at a time)."""
    if device.type != "cuda":
        return data
    size = sum(t.numel() * t.element_size() for t in (data.inputs, data.index, data.targets))
    free, _ = torch.cuda.mem_get_info(device)
    return data.to(device) if size <= STAGE_FRACTION * free else data


def _compiled_first_step(run: "Member", batch: Graded):
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


def train_run(config: dict, device: torch.device, progress: bool | None = None, cache_dir=None) -> Trained:
    """Train and test one validated configuration. Failures are returned, not raised (Ctrl-C and
    SIGTERM are raised: the caller records the run as interrupted)."""
    run = Member(config, device)
    try:
        run.prepare(cache_dir)
        bar = _progress_bar(run.total_steps, sys.stderr.isatty() if progress is None else progress,
                            f"{config['model']['name']} on {config['task']['name']}")
        stepper = run.model  # what the steps call: the model, or its compiled form (train.compile)
        while not run.finished:
            batch = run.next_batch()
            if run.step == 0 and run.train.compile:
                stepper = _compiled_first_step(run, batch)
            else:
                run.losses.append(train_step(stepper, run.optimizer, batch, run.train.grad_clip, run.autocast()))
            run.end_step()
            bar.update(1)
            if run.history and run.history[-1]["step"] == run.step:
                bar.set_postfix(loss=f"{run.loss_value:.3f}", val_acc=f"{run.history[-1]['val_accuracy']:.3f}")
        bar.close()
        run.finish()
    except Exception as exc:  # noqa: BLE001 - recorded in the store; the caller decides the exit status
        run.fail(exc)
    return run.trained()


class Member:
    """One run's training state: its data, model, optimizer, schedule, validation history, best
    checkpoint and record. ``train_run`` drives one alone; ``evalsuite.train_group`` drives several
    through one batched step. Only the step differs: everything a run decides (its batches, rate,
    evaluations, early stopping, test) is decided here, the same way in both.

    Use: ``prepare()``; then per step ``next_batch()``, append the step's loss to ``losses``,
    ``end_step()``, until ``finished``; then ``finish()``. ``fail(exc)`` records an exception."""

    def __init__(self, config: dict, device: torch.device):
        self.config, self.device = config, device
        self.train = cfg.TrainConfig(**config["train"])  # typed: attributes, validated
        self.seed = config["seed"]
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
        data, self.eval_sets, all_tasks = make_data(self.config["task"], self.train, self.seed, cache_dir=cache_dir)
        self.data, self.tasks = data, all_tasks
        self.slice_keys = tuple(dict.fromkeys(k for t in all_tasks for k in t.slice_keys))
        self.model = cfg.build_model(self.config["model"], max(t.vocab_size for t in all_tasks)).to(self.device)
        self.rng = torch.get_rng_state()  # what random feature maps draw from (resample)
        self.seq_len = data["train"].inputs.shape[1]
        self.metrics.update(parameters=self.model.num_parameters(), state_size=self.model.state_size(self.seq_len),
                            seq_len=self.seq_len)
        self.batches_per_epoch = max(1, len(data["train"]) // self.train.batch_size)
        self.total_steps = max(1, int(round(self.train.epochs * self.batches_per_epoch)))
        self.optimizer = make_optimizer(self.model, self.train, self.device)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lr_factor(self.total_steps, self.train.warmup_frac, self.train.schedule, self.train.decay_frac))
        self.shuffle = torch.Generator().manual_seed(self.seed)
        self.staged = stage(Graded.of(data["train"]), self.device)
        self.order = torch.empty(0, dtype=torch.long)
        self.best = {"accuracy": -1.0, "step": 0, "state": None}
        self.evals_without_gain = 0
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
            return
        bad = first_non_finite(self.losses)  # the loop's one read of the losses
        if bad is not None:
            raise Diverged(f"training loss became {float(self.losses[bad])} at step {self.step - len(self.losses) + bad + 1}")
        self.loss_value, self.losses = float(self.losses[-1]), []
        val = evaluate(self.model, self.data["val"], self.device, self.train.precision)
        self.history.append({"step": self.step, "train_loss": self.loss_value, "val_loss": val["loss"],
                             "val_accuracy": val["accuracy"], "lr": self.schedule.get_last_lr()[0]})
        if val["accuracy"] > self.best["accuracy"]:
            self.best = {"accuracy": val["accuracy"], "step": self.step, "state": copy.deepcopy(self.model.state_dict())}
            self.evals_without_gain = 0
        else:
            self.evals_without_gain += 1
        self.finished = (self.step >= self.total_steps or val["accuracy"] >= self.train.target_accuracy
                         or bool(self.train.patience and self.evals_without_gain >= self.train.patience))

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

    def finish(self) -> None:
        """Test the best checkpoint on the test split and every eval segment; fill the metrics."""
        train_time = time.perf_counter() - self.train_start
        model, data, train, step = self.model, self.data, self.train, self.step
        if self.best["state"] is not None:
            model.load_state_dict(self.best["state"])  # report the checkpoint that validated best
        self.best["state"] = None
        test = evaluate(model, data["test"], self.device, train.precision, slice_keys=self.slice_keys)
        slices = [{"split": "test", **s} for s in test.get("slices", [])]
        for i, eval_set in enumerate(self.eval_sets):
            ev = evaluate(model, eval_set, self.device, train.precision, slice_keys=self.slice_keys)
            self.metrics[f"eval_{i}_accuracy"] = ev["accuracy"]
            slices.extend({"split": f"eval_{i}", **s}
                          for s in ev.get("slices") or [{"accuracy": ev["accuracy"], "graded": ev["graded"]}])
        head_task = self.tasks[0]
        self.metrics.update(
            accuracy=test["accuracy"], loss=test["loss"], graded=test["graded"], majority_rate=majority_rate(data["test"]),
            context_chance=head_task.context_chance(data["test"]), chance_rule=head_task.chance_rule,
            val_accuracy=self.best["accuracy"], best_step=self.best["step"], steps=step, budget_steps=self.total_steps,
            **convergence(self.history, self.total_steps, train.target_accuracy), train_loss=self.loss_value,
            train_time_s=train_time, steps_per_s=step / max(train_time, 1e-9), slices=slices,
            state_bytes_fp32=state_size(model, self.seq_len)["bytes"])
        self.test = data["test"]
        self.status, self.finished = Status.DONE, True
        self.release()

    def fail(self, exc: Exception) -> None:
        if isinstance(exc, Diverged):
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
        record = RunRecord(run_id=cfg.run_id(self.config), config=self.config, status=self.status, error=self.error,
                           metrics=self.metrics, history=self.history, warnings=self.warnings)
        return Trained(record, self.model, self.test)


def _progress_bar(total: int, show: bool, desc: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not show, desc=desc, leave=False, dynamic_ncols=True)
