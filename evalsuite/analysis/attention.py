"""Each layer's explicit mixing matrix for a batch, and where each graded query's answer sits;
``graded_chunks`` walks the analysed examples once for every run analysis."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import torch

from evalsuite.models import AttentionView
from evalsuite.tasks import IGNORE


@torch.no_grad()
def attention_views(model, inputs: torch.Tensor) -> tuple[torch.Tensor, list[AttentionView]]:
    """``(logits, one AttentionView per layer)`` for ``inputs [B, T]``; the views come from each
    mixer's input as recorded by a forward hook (after norm and short convolution)."""
    captured: list[torch.Tensor] = []
    hooks = [block.mixer.register_forward_pre_hook(lambda _m, args: captured.append(args[0]))
             for block in model.blocks]
    try:
        logits = model(inputs)
    finally:
        for h in hooks:
            h.remove()
    views = [block.mixer.attention(x) for block, x in zip(model.blocks, captured)]
    return logits, views


def answer_positions(inputs: torch.Tensor, targets: torch.Tensor, answers: torch.Tensor | None = None) -> torch.Tensor:
    """``[B, T]``: for each graded position t, where its answer sits. The generator's own record
    (``Batch.answers``) when given; otherwise the latest j < t whose input token is t's target
    (which picks a later copy under random filler or distractors); -1 where ungraded or absent."""
    if answers is not None:
        return torch.where(targets != IGNORE, answers.to(targets.device), -1)
    B, T = inputs.shape
    earlier = torch.ones(T, T, dtype=torch.bool, device=inputs.device).tril(-1)        # j < t
    match = (inputs[:, None, :] == targets[:, :, None]) & earlier & (targets != IGNORE)[:, :, None]
    index = torch.arange(T, device=inputs.device).expand(B, T, T)
    return torch.where(match, index, -1).amax(-1)


def mixer_name(block) -> str:
    return type(block.mixer).__name__


def answer_reach(model) -> int:
    """How many positions from the answer's can carry it into a mixer: the answer itself and the
    next ``conv_kernel - 1`` (the short convolution mixes a token into those that follow)."""
    backbone = getattr(model, "backbone", None)
    return max(1, getattr(backbone, "conv_kernel", 0) or 1)


def answer_window(answers: torch.Tensor, positions: torch.Tensor, T: int, reach: int) -> torch.Tensor:
    """``[Q, T]`` mask of a ≤ j < a + reach and j <= position for each query's answer position a
    (all False where a = -1)."""
    j = torch.arange(T, device=answers.device)[None, :]
    a, t = answers[:, None], positions[:, None]
    return (a >= 0) & (j >= a) & (j < a + reach) & (j <= t)


@dataclass
class Chunk:
    """A slice of the analysed examples with what every analysis of attention reads."""

    lo: int                     # index of its first example
    inputs: torch.Tensor        # [b, T]
    targets: torch.Tensor       # [b, T]
    logits: torch.Tensor        # [b, T, vocab]
    views: list[AttentionView]  # one per layer
    found: torch.Tensor         # [b, T]: where each graded position's answer sits (-1: none)


@torch.no_grad()
def graded_chunks(model, inputs: torch.Tensor, targets: torch.Tensor, answers: torch.Tensor | None = None,
                  batch_size: int = 32) -> Iterator[Chunk]:
    """The examples in chunks of ``batch_size``, each with its logits, attention views and answer
    positions: the one pass over graded positions that the run analyses share."""
    model.eval()
    for lo in range(0, inputs.shape[0], batch_size):
        x, y = inputs[lo:lo + batch_size], targets[lo:lo + batch_size]
        a = None if answers is None else answers[lo:lo + batch_size]
        logits, views = attention_views(model, x)
        yield Chunk(lo, x, y, logits, views, answer_positions(x, y, a))
