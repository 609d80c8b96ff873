"""Evaluation: accuracy and loss over the scored positions of a split, optionally broken down by
per-example metadata, under the run's precision."""
from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

from evalsuite.resources import eval_batch_size
from evalsuite.records import SEGMENT_PREFIX
from evalsuite.tasks import Batch


def autocast_for(device: torch.device, precision: str):
    if precision == "bf16" or (precision == "auto" and device.type == "cuda"):
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def grader(tasks: list):
    """The task that grades a run's splits when every task of it accepts several answers at a
    position (``valid_tokens``: RegBench), else None (the target alone is right)."""
    return tasks[0] if tasks and all(hasattr(t, "valid_tokens") for t in tasks) else None


@torch.no_grad()
def evaluate(model, data: Batch, device: torch.device, precision: str = "auto", batch_size: int = 256,
             slice_keys: tuple[str, ...] = (), task=None) -> dict:
    """Accuracy and mean loss over the scored positions of ``data``; with ``slice_keys``, also
    accuracy per value of that per-example metadata (``slices``). A ``task`` whose next token may
    be any of several (``valid_tokens`` and ``next_distribution``, RegBench) counts the argmax over
    its answer tokens as right when it is valid, and adds ``tvd``, the mean total variation distance to the true
    next-token distribution."""
    was_training = model.training
    model.eval()
    correct, counts, losses = [], [], []
    graded_by = getattr(task, "valid_tokens", None)
    tvd = 0.0
    batch_size = eval_batch_size(data.inputs.shape[1], batch_size)  # long segments: fewer examples a batch
    for start in range(0, len(data), batch_size):
        batch = data[start:start + batch_size].to(device)
        mask = batch.score_mask
        with autocast_for(device, precision):
            hidden = model.hidden(batch.inputs)[mask]
            logits = model.head(hidden).float()
        target = batch.targets[mask]
        losses.append(F.cross_entropy(logits, target, reduction="sum").item() if target.numel() else 0.0)
        rows = mask.nonzero()[:, 0]  # example of each scored position
        if graded_by is None:
            hits = (logits.argmax(-1) == target).long()
        else:
            dist = task.next_distribution(batch)                               # [n, T, V] the true next token's
            valid = graded_by(batch, dist)[mask]                               # [m, V] the answers accepted
            lo, hi = task.answer_tokens() or (0, logits.shape[-1])            # the argmax among the answer tokens
            hits = valid.gather(1, logits[:, lo:hi].argmax(-1)[:, None] + lo)[:, 0].long()
            tvd += 0.5 * (logits.softmax(-1) - dist[mask]).abs().sum().item()
        correct.append(torch.zeros(len(batch), dtype=torch.long, device=device).index_add_(0, rows, hits).cpu())
        counts.append(mask.sum(1).cpu())
    model.train(was_training)
    correct, counts = torch.cat(correct), torch.cat(counts)
    total = int(counts.sum())
    out = {"accuracy": int(correct.sum()) / max(total, 1), "loss": sum(losses) / max(total, 1), "graded": total}
    if graded_by is not None:
        out["tvd"] = tvd / max(total, 1)
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


def segment_accuracies(slices: list[dict], keys: tuple[str, ...]) -> dict[str, float]:
    """History entries of a mixture's segments: ``"val_accuracy@num_kv_pairs=8"`` (the keys its
    segments differ in) -> that segment's validation accuracy (``records.segment_curves`` reads them)."""
    return {f"{SEGMENT_PREFIX}{','.join(f'{k}={s[k]}' for k in keys)}": s["accuracy"] for s in slices}
