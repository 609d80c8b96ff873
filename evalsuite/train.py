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


def graded_loss(model, batch: Batch, mask: torch.Tensor | None = None):
    """Cross-entropy over graded positions only; returns (loss, predictions, targets) there."""
    mask = batch.targets != IGNORE if mask is None else mask
    hidden = model.hidden(batch.inputs)[mask]
    logits = model.head(hidden).float()
    targets = batch.targets[mask]
    return F.cross_entropy(logits, targets), logits.argmax(-1), targets


def training_loss(model, batch: Batch) -> torch.Tensor:
    """Mean cross-entropy over the graded positions. On CUDA the head runs on every position and
    ``ignore_index`` drops the others: selecting them by a boolean mask would need their count on
    the host (a sync per step). On CPU the mask path is cheaper (the head runs on graded positions
    only). The two are the same loss (tests/test_train.py)."""
    if batch.inputs.device.type == "cuda":
        logits = model.head(model.hidden(batch.inputs)).float()                    # [B, T, V]
        return F.cross_entropy(logits.flatten(0, 1), batch.targets.flatten(), ignore_index=IGNORE)
    return graded_loss(model, batch)[0]


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


def train_step(model, optimizer, batch: Batch, grad_clip: float, autocast) -> torch.Tensor:
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


def stage(data: Batch, device: torch.device) -> Batch:
    """``data`` moved to ``device`` once, where it fits (CUDA); else as it is (batches then move one
    at a time)."""
    if device.type != "cuda":
        return data
    size = data.inputs.numel() * data.inputs.element_size() * 3  # inputs, targets, masks
    free, _ = torch.cuda.mem_get_info(device)
    return data.to(device) if size <= STAGE_FRACTION * free else data


def _compiled_first_step(model, optimizer, batch, train, device, metrics, warnings, losses):
    """The first step through ``torch.compile(model)``, timed (``compile_time_s``: compilation plus
    one step); where compilation fails, a warning and the same step in eager mode. Returns what the
    later steps call."""
    autocast = autocast_for(device, train.precision)
    start = time.perf_counter()
    try:
        # the trunk only: the graded positions are selected by a mask of data-dependent size
        compiled = types.SimpleNamespace(hidden=torch.compile(model.hidden), head=model.head, parameters=model.parameters)
        losses.append(train_step(compiled, optimizer, batch, train.grad_clip, autocast))
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        metrics["compile_time_s"] = time.perf_counter() - start
        return compiled
    except Exception as exc:  # no C++ compiler, an unsupported op, ...: train eagerly
        message = f"train.compile: torch.compile failed ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}); trained eagerly"
        warnings.append(message)
        optimizer.zero_grad(set_to_none=True)
        losses.append(train_step(model, optimizer, batch, train.grad_clip, autocast))
        return model


def resample_feature_maps(model: torch.nn.Module) -> None:
    """Redraw every random feature map of ``model`` (a no-op for deterministic maps)."""
    for module in model.modules():
        if isinstance(module, FeatureMap):
            module.resample()


def train_run(config: dict, device: torch.device, progress: bool | None = None, cache_dir=None) -> Trained:
    """Train and test one validated configuration. Failures are returned, not raised (Ctrl-C and
    SIGTERM are raised: the caller records the run as interrupted)."""
    metrics: dict[str, Any] = {}
    history: list[dict[str, float]] = []
    warnings: list[str] = []
    model = test = None
    start = time.perf_counter()
    try:
        model, test = _train(config, device, metrics, history, progress, cache_dir, warnings)
        status, error = Status.DONE, None
    except Diverged as exc:
        status, error = Status.DIVERGED, str(exc)
    except Exception as exc:  # recorded in the store; the caller decides the exit status
        status, error = Status.FAILED, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}"
    metrics["wall_time_s"] = time.perf_counter() - start
    record = RunRecord(run_id=cfg.run_id(config), config=config, status=status, error=error, metrics=metrics,
                       history=history, warnings=warnings)
    return Trained(record, model, test)


def _train(config: dict, device: torch.device, metrics: dict, history: list, progress: bool | None, cache_dir,
           warnings: list[str]):
    """Fill ``metrics``, ``history`` and ``warnings``; return the model at its best checkpoint and
    the test batch."""
    train, seed = cfg.TrainConfig(**config["train"]), config["seed"]  # typed: attributes, validated
    torch.manual_seed(seed)
    data, eval_sets, all_tasks = make_data(config["task"], train, seed, cache_dir=cache_dir)
    slice_keys = tuple(dict.fromkeys(k for t in all_tasks for k in t.slice_keys))
    model = cfg.build_model(config["model"], max(t.vocab_size for t in all_tasks)).to(device)
    seq_len = data["train"].inputs.shape[1]
    metrics.update(parameters=model.num_parameters(), state_size=model.state_size(seq_len),
                          seq_len=seq_len)

    batches_per_epoch = max(1, len(data["train"]) // train.batch_size)
    total_steps = max(1, int(round(train.epochs * batches_per_epoch)))
    optimizer = make_optimizer(model, train, device)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lr_factor(total_steps, train.warmup_frac, train.schedule, train.decay_frac))
    shuffle = torch.Generator().manual_seed(seed)
    show = sys.stderr.isatty() if progress is None else progress
    bar = _progress_bar(total_steps, show, f"{config['model']['name']} on {config['task']['name']}")

    best = {"accuracy": -1.0, "step": 0, "state": None}
    evals_without_gain = 0
    step, loss_value = 0, float("nan")
    order = torch.empty(0, dtype=torch.long)
    staged = stage(data["train"], device)
    stepper = model  # what the training steps call: the model, or its compiled form (train.compile)
    losses: list[torch.Tensor] = []  # since the last evaluation, on the device (no host sync per step)
    model.train()
    train_start = time.perf_counter()
    while step < total_steps:
        if step % batches_per_epoch == 0:
            order = torch.randperm(len(data["train"]), generator=shuffle).to(staged.inputs.device)
        i = step % batches_per_epoch
        batch = staged[order[i * train.batch_size:(i + 1) * train.batch_size]].to(device)
        if step == 0 and train.compile:
            stepper = _compiled_first_step(model, optimizer, batch, train, device, metrics, warnings, losses)
        else:
            losses.append(train_step(stepper, optimizer, batch, train.grad_clip, autocast_for(device, train.precision)))
        schedule.step()
        step += 1
        bar.update(1)
        if train.resample_every and step % train.resample_every == 0:
            resample_feature_maps(model)  # between steps: never inside a sequence

        if step % train.eval_every == 0 or step == total_steps:
            bad = first_non_finite(losses)  # the loop's one read of the losses
            if bad is not None:
                raise Diverged(f"training loss became {float(losses[bad])} at step {step - len(losses) + bad + 1}")
            loss_value, losses = float(losses[-1]), []
            val = evaluate(model, data["val"], device, train.precision)
            history.append({"step": step, "train_loss": loss_value, "val_loss": val["loss"],
                                   "val_accuracy": val["accuracy"], "lr": schedule.get_last_lr()[0]})
            bar.set_postfix(loss=f"{loss_value:.3f}", val_acc=f"{val['accuracy']:.3f}")
            if val["accuracy"] > best["accuracy"]:
                best = {"accuracy": val["accuracy"], "step": step, "state": copy.deepcopy(model.state_dict())}
                evals_without_gain = 0
            else:
                evals_without_gain += 1
            if val["accuracy"] >= train.target_accuracy:
                break
            if train.patience and evals_without_gain >= train.patience:
                break
    bar.close()
    train_time = time.perf_counter() - train_start

    if best["state"] is not None:
        model.load_state_dict(best["state"])  # report the checkpoint that validated best
    test = evaluate(model, data["test"], device, train.precision, slice_keys=slice_keys)
    slices = [{"split": "test", **s} for s in test.get("slices", [])]
    for i, eval_set in enumerate(eval_sets):
        ev = evaluate(model, eval_set, device, train.precision, slice_keys=slice_keys)
        metrics[f"eval_{i}_accuracy"] = ev["accuracy"]
        slices.extend({"split": f"eval_{i}", **s}
                      for s in ev.get("slices") or [{"accuracy": ev["accuracy"], "graded": ev["graded"]}])
    head_task = all_tasks[0]
    metrics.update(
        accuracy=test["accuracy"], loss=test["loss"], graded=test["graded"], majority_rate=majority_rate(data["test"]),
        context_chance=head_task.context_chance(data["test"]), chance_rule=head_task.chance_rule,
        val_accuracy=best["accuracy"], best_step=best["step"], steps=step, budget_steps=total_steps,
        **convergence(history, total_steps, train.target_accuracy), train_loss=loss_value,
        train_time_s=train_time, steps_per_s=step / max(train_time, 1e-9), slices=slices,
        state_bytes_fp32=state_size(model, seq_len)["bytes"])
    return model, data["test"]


def _progress_bar(total: int, show: bool, desc: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not show, desc=desc, leave=False, dynamic_ncols=True)
