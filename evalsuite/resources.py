"""Resource estimates, checked before any work starts: the memory a run's data, model, optimizer
and activations take (``check_memory``), the batch size long evaluation segments use
(``eval_batch_size``), and the cap on a run's steps."""
from __future__ import annotations

import os
from typing import Any

from evalsuite.errors import ConfigError

MAX_STEPS = 10_000_000  # days of training at CPU speed; more is a typo (train.epochs=1e9)
MEMORY_CHECK_ENV = "EVALSUITE_MEMORY_CHECK"  # "off": try sizes that the estimate says do not fit
EVAL_TOKENS = 2**18  # tokens per evaluation batch: long test segments are evaluated a few examples at a time


def available_memory() -> int:
    """Bytes this process may still allocate: MemAvailable, else free physical pages."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def eval_batch_size(seq_len: int, cap: int = 256) -> int:
    return max(1, min(cap, EVAL_TOKENS // max(seq_len, 1)))


def training_bytes(n_params: int, batch_size: int, seq_len: int, d_model: int, n_layers: int, n_heads: int) -> int:
    """Weights, gradients, two AdamW moments and the best checkpoint; activations of one batch
    (about 32 floats per width unit per layer per token, plus one T x T score matrix per head)."""
    activations = batch_size * seq_len * n_layers * (32 * d_model + 2 * n_heads * seq_len) * 4
    return 5 * 4 * n_params + activations


def evaluation_bytes(n_params: int, seq_len: int, d_model: int, n_layers: int) -> int:
    """No gradients: the weights and checkpoint, and one evaluation batch's activations (attention
    runs through scaled_dot_product_attention, which does not keep T x T scores)."""
    tokens = eval_batch_size(seq_len) * seq_len
    return 2 * 4 * n_params + tokens * n_layers * 32 * d_model * 4


def data_bytes(sets: list[tuple[Any, int]]) -> int:
    """Inputs, targets and masks of ``(task, examples)`` sets: three int64 per token."""
    return sum(3 * 8 * int(n) * t.seq_len for t, n in sets)


def check_workers(workers: int, per_run: int) -> None:
    """``UserError`` when ``workers`` runs of ``per_run`` bytes each cannot fit in the memory available."""
    from evalsuite.errors import UserError

    have = available_memory()
    if workers <= 1 or workers * per_run <= have or os.environ.get(MEMORY_CHECK_ENV) == "off":
        return
    gib = 2**30
    fit = max(1, have // max(per_run, 1))
    raise UserError(f"--workers {workers}: the largest run needs about {per_run / gib:,.1f} GiB, so {workers} at once "
                    f"about {workers * per_run / gib:,.1f} GiB, but {have / gib:,.1f} GiB is available; use at most {fit} "
                    f"(or set {MEMORY_CHECK_ENV}=off to try anyway)")


def check_memory(sets: list[tuple[Any, int]], *, what: str, model_bytes: int = 0) -> None:
    """Refuse (``ConfigError``, with the figures) data plus model that cannot fit in memory.
    ``sets``: ``(task, examples)``; each example takes inputs and targets of ``seq_len`` int64."""
    data = data_bytes(sets)
    gib = 2**30
    examples = sum(int(n) for _, n in sets)
    detail = f"{data / gib:,.1f} GiB for {examples:,} examples of length {max(t.seq_len for t, _ in sets):,}"
    if model_bytes:
        detail += f", {model_bytes / gib:,.1f} GiB for the model, its optimizer and activations"
    require_memory(data + model_bytes, what, detail)


def require_memory(need: int, what: str, detail: str) -> None:
    """``ConfigError`` naming ``what`` when ``need`` bytes exceed the memory available (unless
    ``$EVALSUITE_MEMORY_CHECK`` is ``off``)."""
    have = available_memory()
    if need <= have or os.environ.get(MEMORY_CHECK_ENV) == "off":
        return
    gib = 2**30
    raise ConfigError(f"{what}: needs about {need / gib:,.1f} GiB ({detail}) but {have / gib:,.1f} GiB is available; "
                      f"use smaller sizes, or set {MEMORY_CHECK_ENV}=off to try anyway")


def check_steps(epochs: float, num_train: int, batch_size: int) -> None:
    steps = epochs * max(1, num_train // batch_size)
    if steps < 1:
        raise ConfigError(f"train.epochs: {epochs:g} epochs of {max(1, num_train // batch_size)} steps is {steps:.3g} "
                          f"steps, less than one; give at least {1 / max(1, num_train // batch_size):.3g}")
    if steps > MAX_STEPS:
        raise ConfigError(f"train.epochs: {epochs:g} epochs of {num_train // batch_size} steps is "
                          f"{steps:.3g} steps; at most {MAX_STEPS:,} are allowed")
