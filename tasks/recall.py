r"""Multi-query associative recall (MQAR), after Zoology (arXiv 2312.04927).

Layout of one example (T = seq_len, D = num_kv_pairs)::

    k1 v1 k2 v2 ... kD vD | 0 0 k3 0 0 0 k1 0 ...
    \____ 2D tokens ____/  \____ T - 2D tokens, each key queried once at an even offset ____/

Keys come from [1, V/2), values from [V/2, V), both without replacement; 0 is filler. The
offsets 2g are drawn without replacement with p(g) ~ g^(a-1) (most queries come early). The
target at a query position is the value that followed that key; every other target is -100.
"""
from __future__ import annotations

import numpy as np
import torch
from pydantic import Field

from .base import IGNORE, Batch, Task, TaskParams, sample_distinct, weighted_sample_distinct
from . import TASKS


class RecallParams(TaskParams):
    vocab_size: int = Field(8192, ge=4, description="tokens; keys use [1, V/2), values [V/2, V)")
    seq_len: int = Field(64, ge=4, description="sequence length T")
    num_kv_pairs: int = Field(4, ge=1, description="key-value pairs D, each queried once")
    power_a: float = Field(0.01, gt=0, le=1, description="query gaps are drawn with p(g) ~ g^(a-1)")
    random_non_queries: bool = Field(False, description="fill non-query positions with random tokens instead of 0")


@TASKS.register("recall")
class MQAR(Task):
    name = "recall"
    description = "multi-query associative recall (Zoology MQAR)"
    Params = RecallParams
    presets = {
        "default": dict(vocab_size=256, seq_len=64, num_kv_pairs=8),
        "tiny": dict(vocab_size=64, seq_len=32, num_kv_pairs=4),
        # Zoology figure 2 sizes; pick one (T, D) of (64,4) (128,8) (256,16) (512,64)
        "zoology": dict(vocab_size=8192, seq_len=64, num_kv_pairs=4, random_non_queries=True),
    }

    def check(self) -> None:
        p = self.params
        if 4 * p.num_kv_pairs > p.seq_len:
            raise ValueError(f"recall needs 4 x num_kv_pairs <= seq_len (2D tokens for the pairs, D query "
                             f"slots at even offsets), got num_kv_pairs={p.num_kv_pairs}, seq_len={p.seq_len}")
        n_keys, n_values = p.vocab_size // 2 - 1, p.vocab_size - p.vocab_size // 2
        if p.num_kv_pairs > min(n_keys, n_values):
            raise ValueError(f"recall with vocab_size={p.vocab_size} has {n_keys} distinct keys and {n_values} "
                             f"values, too few for num_kv_pairs={p.num_kv_pairs}; use vocab_size >= "
                             f"{2 * p.num_kv_pairs + 2}")

    def _generate(self, n: int, rng: np.random.Generator) -> Batch:
        p = self.params
        V, T, D = p.vocab_size, p.seq_len, p.num_kv_pairs
        half = V // 2
        keys = sample_distinct(rng, n, D, 1, half)
        values = sample_distinct(rng, n, D, half, V)
        context = 2 * D
        space = (T - context) // 2
        weights = p.power_a * np.arange(1, space + 1, dtype=np.float64) ** (p.power_a - 1)
        gaps = weighted_sample_distinct(rng, n, D, weights / weights.sum())

        inputs = np.zeros((n, T), dtype=np.int64)
        inputs[:, 0:context:2] = keys
        inputs[:, 1:context:2] = values
        query_pos = context + 2 * gaps
        np.put_along_axis(inputs, query_pos, keys, axis=1)
        targets = np.full((n, T), IGNORE, dtype=np.int64)
        np.put_along_axis(targets, query_pos, values, axis=1)
        if p.random_non_queries:  # as in Zoology: random tokens, which may collide with keys
            filler = inputs == 0
            inputs[filler] = rng.integers(0, V, size=int(filler.sum()))
        return Batch(torch.from_numpy(inputs), torch.from_numpy(targets),
                     {"num_kv_pairs": torch.full((n,), D, dtype=torch.long)})
