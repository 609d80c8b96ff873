r"""Compositional MQAR (Zoology's newer variant, ``zoology/data/compositional_mqar.py``): every key
is two tokens, and neither alone names the value.

The D pairs form a grid: sqrt(D) first keys a_i x sqrt(D) second keys b_j, each combination bound
to its own value, written as triplets in random order; then each combination is queried once,
its two tokens at offsets 3g and 3g + 1 of the query region (g drawn without replacement with
p(g) ~ g^(a-1), as MQAR's gaps), and the value is the target at the second key's position.
First keys come from [1, V/3), second keys from [V/3, 2V/3), values from [2V/3, V); 0 is filler.
With D = 4, T = 24::

    inputs   a1 b2 v3 a2 b2 v1 a1 b1 v4 a2 b1 v2 | a2 b1  _  _  _  _ a1 b2  _ a1 b1  _ ...
    targets   .  .  .  .  .  .  .  .  .  .  .  . |  . v2  .  .  .  .  . v3  .  . v4  . ...

A reader that binds one key token to values (the second key's, ``one_key``) narrows the answer to
the sqrt(D) values written beside it, so the floor is 1/sqrt(D), not MQAR's 1/D: a model above it
binds both tokens. Zoology requires 6 D <= T and D a perfect square; so does this task.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from pydantic import Field

from . import TASKS
from .base import IGNORE, Batch, Task, TaskParams, sample_distinct, weighted_sample_distinct


class CompositionalParams(TaskParams):
    vocab_size: int = Field(256, ge=6, description="tokens: first keys [1, V/3), second keys [V/3, 2V/3), values [2V/3, V)")
    seq_len: int = Field(64, ge=6, description="sequence length T (even, at least 6 D)")
    num_kv_pairs: int = Field(4, ge=1, description="compound keys D, a perfect square (a sqrt(D) x sqrt(D) grid), each "
                              "queried once")
    power_a: float = Field(0.01, gt=0, le=1, description="query gaps are drawn with p(g) ~ g^(a-1)")
    random_non_queries: bool = Field(False, description="fill non-query positions with random tokens (Zoology's default "
                                     "is true) instead of 0")


def _one_key(x, pos, span, fit):
    """The values written right after the current token (a query's second key) in the context:
    one key token's bindings, without the compound."""
    out = []
    for t in pos.tolist():
        out.append({int(x[j + 1]) for j in range(t - 1) if x[j] == x[t] and span[0] <= x[j + 1] < span[1]})
    return out


@TASKS.register()  # under its `name`
class CompositionalMQAR(Task):
    name = "compositional_recall"
    description = "compositional MQAR: keys of two tokens on a grid, neither alone names the value (Zoology)"
    Params = CompositionalParams
    presets = {
        "default": dict(vocab_size=256, seq_len=64, num_kv_pairs=4),
        "tiny": dict(vocab_size=64, seq_len=32, num_kv_pairs=4),
        # Zoology's composition_configs: V 8192, random filler
        "zoology": dict(vocab_size=8192, seq_len=64, num_kv_pairs=4, random_non_queries=True),
    }
    slice_keys = ("num_kv_pairs", "seq_len")
    chance_rule = "1/D: a random value of the context (the one_key reader, 1/sqrt(D), is above it)"

    def own_readers(self):
        return {"one_key": _one_key}

    def answer_tokens(self):
        return 2 * (self.params.vocab_size // 3), self.params.vocab_size

    def context_chance(self, batch: Batch) -> float:
        return 1 / batch.meta["num_kv_pairs"].double().mean().item()

    def token_names(self) -> list[str]:
        third = self.params.vocab_size // 3
        return (["_"] + [f"a{i}" for i in range(1, third)] + [f"b{i}" for i in range(third)]
                + [f"v{i}" for i in range(self.params.vocab_size - 2 * third)])

    def check(self) -> None:
        p = self.params
        side = math.isqrt(p.num_kv_pairs)
        if side * side != p.num_kv_pairs:
            raise ValueError(f"compositional_recall: num_kv_pairs must be a perfect square (a grid of first x second "
                             f"keys: 4, 9, 16, ...), got {p.num_kv_pairs}")
        if 6 * p.num_kv_pairs > p.seq_len or p.seq_len % 2:
            raise ValueError(f"compositional_recall needs an even seq_len >= 6 x num_kv_pairs = {6 * p.num_kv_pairs} "
                             f"(3 D tokens of triplets, D query slots of 3), got seq_len={p.seq_len}")
        third = p.vocab_size // 3
        if side > third - 1 or p.num_kv_pairs > p.vocab_size - 2 * third:
            raise ValueError(f"compositional_recall with vocab_size={p.vocab_size} has too few keys or values for "
                             f"num_kv_pairs={p.num_kv_pairs}; use vocab_size >= {3 * p.num_kv_pairs + 3}")

    def _generate(self, n: int, rng: np.random.Generator) -> Batch:
        p = self.params
        V, T, D = p.vocab_size, p.seq_len, p.num_kv_pairs
        side, third = math.isqrt(D), V // 3
        first = sample_distinct(rng, n, side, 1, third)                   # [n, side]
        second = sample_distinct(rng, n, side, third, 2 * third)          # [n, side]
        order = np.argsort(rng.random((n, D)), axis=1)                    # the grid's cells in random order
        k1 = np.take_along_axis(first.repeat(side, axis=1), order, axis=1)   # [n, D]: a1 a1 a2 a2 ... shuffled
        k2 = np.take_along_axis(np.tile(second, (1, side)), order, axis=1)   # [n, D]: b1 b2 b1 b2 ... alike
        values = sample_distinct(rng, n, D, 2 * third, V)                 # [n, D]
        context = 3 * D
        space = (T - context) // 3
        weights = p.power_a * np.arange(1, space + 1, dtype=np.float64) ** (p.power_a - 1)
        gaps = weighted_sample_distinct(rng, n, D, weights / weights.sum())  # [n, D]

        inputs = np.zeros((n, T), dtype=np.int64)
        inputs[:, 0:context:3], inputs[:, 1:context:3], inputs[:, 2:context:3] = k1, k2, values
        query = context + 3 * gaps                                          # the first key's position
        np.put_along_axis(inputs, query, k1, axis=1)
        np.put_along_axis(inputs, query + 1, k2, axis=1)
        targets = np.full((n, T), IGNORE, dtype=np.int64)
        np.put_along_axis(targets, query + 1, values, axis=1)
        answers = np.full((n, T), -1, dtype=np.int64)
        np.put_along_axis(answers, query + 1, np.arange(2, context, 3)[None, :].repeat(n, 0), axis=1)
        if p.random_non_queries:  # as Zoology: any token, so filler may repeat a key
            filler = inputs == 0
            inputs[filler] = rng.integers(0, V, size=int(filler.sum()))
        return Batch(torch.from_numpy(inputs), torch.from_numpy(targets),
                     {"num_kv_pairs": torch.full((n,), D, dtype=torch.long), "seq_len": torch.full((n,), T)},
                     answers=torch.from_numpy(answers))
