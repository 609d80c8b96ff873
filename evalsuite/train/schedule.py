"""A run's learning-rate schedule (``lr_factor``) and how its end reads (``convergence``: reached
the target, spent its budget, stopped on patience or a plateau, still undertrained)."""
from __future__ import annotations

import math
from typing import Callable


# A run that misses its target is "undertrained" when the best validation accuracy of the last
# quarter of its budget beats everything before by at least this much: it was still learning.
UNDERTRAINED_WINDOW = 0.25
UNDERTRAINED_GAIN = 0.01


def convergence(history: list[dict], budget_steps: int, target: float, plateau: bool = False) -> dict:
    """``{"stopped": "target" | "budget" | "patience" | "plateau", "undertrained": bool,
    "last_quarter_gain": float}`` from a run's validation history (``step``, ``val_accuracy``), by
    the rule above (``plateau``: it stopped on a plateau, ``TrainConfig.plateau_window``)."""
    if plateau:
        return {"stopped": "plateau", "undertrained": False, "last_quarter_gain": 0.0}
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


def lr_factor(total_steps: int, warmup_frac: float, schedule: str = "wsd", decay_frac: float = 0.2,
              warmup_steps: int | None = None) -> Callable[[int], float]:
    """Learning-rate factor per step: linear warm-up (``warmup_steps``, else ``warmup_frac`` of the
    budget), then ``schedule`` (down to 10% at the end)."""
    warmup = int(total_steps * warmup_frac) if warmup_steps is None else warmup_steps
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
