r"""Multi-query associative recall (MQAR), after Zoology (arXiv 2312.04927).

Layout of one example (T = seq_len, D = num_kv_pairs)::

    k1 v1 k2 v2 ... kD vD | 0 0 k3 0 0 0 k1 0 ...
    \____ 2D tokens ____/  \____ T - 2D tokens, each key queried once at an even offset ____/

Keys come from [1, V/2), values from [V/2, V), both without replacement; 0 is filler. The
offsets 2g are drawn without replacement with p(g) ~ g^(a-1) (most queries come early). The
target at a query position is the value that followed that key; every other target is -100.

Repeated context ("just read twice", Arora et al. 2024; ``num_passes`` P > 1): the block of pairs
is written P times before the queries, so a fixed-state model reads every pair again after it
has seen which keys exist. With D = 2, P = 2, T = 12 (queries at even offsets after the passes)::

    inputs   k3 v7 k1 v5 | k3 v7 k1 v5 | k1  _  k3  _
    targets   .  .  .  . |  .  .  .  . | v5  .  v7  .

Queries, targets and the chance floor (1/D) are those of one pass; ``answers`` points at the value
in the last pass.

Forgetting MQAR (Zoology's newer variant; ``rebind`` R > 0): after the D pairs, R of the keys are
written again with new values (values stay distinct across all D + R writes), and a query's answer
is the key's latest value, so a model must overwrite, not only add. With D = 3, R = 1::

    inputs   k2 v4 k5 v1 k3 v6 | k5 v9 | k3  _  k5  _  k2  _
    targets   .  .  .  .  .  . |  .  . | v6  .  v9  .  v4  .
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
    filler_vocab: int = Field(0, ge=0, description="with random_non_queries: 0 draws filler from the whole vocabulary "
                              "(Zoology; collisions with keys are counted), N > 0 from N extra tokens disjoint from keys and values")
    num_passes: int = Field(1, ge=1, le=16, description="the block of pairs is written this many times before the "
                            "queries (just read twice: 2)")
    rebind: int = Field(0, ge=0, description="forgetting MQAR: this many keys are written again with new values after "
                        "the pairs; the answer is the latest value")

    LATE_FIELDS = frozenset({"num_passes", "rebind"})


@TASKS.register()  # under its `name`
class MQAR(Task):
    name = "recall"
    description = "multi-query associative recall (Zoology MQAR)"
    Params = RecallParams
    presets = {
        "default": dict(vocab_size=256, seq_len=64, num_kv_pairs=8),
        "tiny": dict(vocab_size=64, seq_len=32, num_kv_pairs=4),
        # Zoology figure 2: V = 8192, (T, D) in (64,4) (128,8) (256,16) (512,64), random filler
        "zoology": dict(vocab_size=8192, seq_len=64, num_kv_pairs=4, random_non_queries=True),
        "zoology-128": dict(vocab_size=8192, seq_len=128, num_kv_pairs=8, random_non_queries=True),
        "zoology-256": dict(vocab_size=8192, seq_len=256, num_kv_pairs=16, random_non_queries=True),
        "zoology-512": dict(vocab_size=8192, seq_len=512, num_kv_pairs=64, random_non_queries=True),
        # Zoology's README plot (zoology/experiments/030325_new_arch): a training mixture, tests to T 1024
        "zoology-mixture": dict(vocab_size=8192, seq_len=64, num_kv_pairs=4, segments=[
            {"seq_len": 64, "num_kv_pairs": 4, "share": 5}, {"seq_len": 128, "num_kv_pairs": 8},
            {"seq_len": 256, "num_kv_pairs": 16}, {"seq_len": 256, "num_kv_pairs": 32}, {"seq_len": 256, "num_kv_pairs": 64}],
            eval_segments=[{"seq_len": 64, "num_kv_pairs": 8}, {"seq_len": 64, "num_kv_pairs": 16},
                           {"seq_len": 128, "num_kv_pairs": 32}, {"seq_len": 256, "num_kv_pairs": 64},
                           {"seq_len": 512, "num_kv_pairs": 128}, {"seq_len": 1024, "num_kv_pairs": 256}]),
        # Zoology's README mixture at CPU scale (the easy path to longer tests: a model trained on one
        # long length alone often learns nothing, Zoology issue 24): train on (64, 4) x 5, (128, 8) and
        # (128, 16); test up to 4x the longest training length with 4x its pairs
        "mixture": dict(vocab_size=256, seq_len=64, num_kv_pairs=4, segments=[
            {"seq_len": 64, "num_kv_pairs": 4, "share": 5}, {"seq_len": 128, "num_kv_pairs": 8},
            {"seq_len": 128, "num_kv_pairs": 16}],
            eval_segments=[{"seq_len": 64, "num_kv_pairs": 8}, {"seq_len": 128, "num_kv_pairs": 32},
                           {"seq_len": 256, "num_kv_pairs": 32}, {"seq_len": 512, "num_kv_pairs": 64}]),
        # just read twice: the default setting with the pairs written twice (T 96 keeps 48 query slots)
        "jrt": dict(vocab_size=256, seq_len=96, num_kv_pairs=8, num_passes=2),
    }
    preset_bases = {"zoology-128": "zoology", "zoology-256": "zoology", "zoology-512": "zoology", "jrt": "default",
                    "mixture": "extrapolate",
                    "zoology-mixture": "zoology-readme"}
    slice_keys = ("num_kv_pairs", "seq_len", "num_passes", "rebind")
    chance_rule = "1/D: answering one of the D values of the context at random"

    def answer_tokens(self):
        return self.params.vocab_size // 2, self.params.vocab_size

    def context_chance(self, batch: Batch) -> float:
        """1/D per query (D from each example's metadata, so mixtures of segments are exact)."""
        graded = (batch.targets != IGNORE).sum(1).double()
        return float((graded / batch.meta["num_kv_pairs"].double()).sum() / graded.sum().clamp_min(1))

    @property
    def vocab_size(self) -> int:
        return self.params.vocab_size + (self.params.filler_vocab if self.params.random_non_queries else 0)

    def token_names(self) -> list[str]:
        half = self.params.vocab_size // 2
        return (["_"] + [f"k{i}" for i in range(1, half)] + [f"v{i}" for i in range(self.params.vocab_size - half)]
                + [f"f{i}" for i in range(self.vocab_size - self.params.vocab_size)])

    def check(self) -> None:
        p = self.params
        if 2 * (p.num_passes + 1) * p.num_kv_pairs > p.seq_len:
            need = "4 x num_kv_pairs" if p.num_passes == 1 else f"2 x (num_passes + 1) x num_kv_pairs = {2 * (p.num_passes + 1) * p.num_kv_pairs}"
            raise ValueError(f"recall needs {need} <= seq_len (2D tokens for the pairs per pass, D query "
                             f"slots at even offsets), got num_kv_pairs={p.num_kv_pairs}, seq_len={p.seq_len}")
        if p.rebind and p.num_passes > 1:
            raise ValueError("recall: rebind (forgetting MQAR) works with num_passes 1 only")
        if p.rebind > p.num_kv_pairs:
            raise ValueError(f"recall: rebind ({p.rebind}) must be at most num_kv_pairs ({p.num_kv_pairs}): "
                             f"each rebound key is one of the pairs' keys")
        if 4 * p.num_kv_pairs + 2 * p.rebind > p.seq_len:
            raise ValueError(f"recall with rebind needs 4 x num_kv_pairs + 2 x rebind = "
                             f"{4 * p.num_kv_pairs + 2 * p.rebind} <= seq_len, got seq_len={p.seq_len}")
        n_keys, n_values = p.vocab_size // 2 - 1, p.vocab_size - p.vocab_size // 2
        if p.rebind and p.num_kv_pairs + p.rebind > n_values:
            raise ValueError(f"recall with vocab_size={p.vocab_size} has {n_values} values, too few for "
                             f"num_kv_pairs + rebind = {p.num_kv_pairs + p.rebind} distinct ones")
        if p.num_kv_pairs > min(n_keys, n_values):
            raise ValueError(f"recall with vocab_size={p.vocab_size} has {n_keys} distinct keys and {n_values} "
                             f"values, too few for num_kv_pairs={p.num_kv_pairs}; use vocab_size >= "
                             f"{2 * p.num_kv_pairs + 2}")

    def _generate(self, n: int, rng: np.random.Generator) -> Batch:
        p = self.params
        V, T, D = p.vocab_size, p.seq_len, p.num_kv_pairs
        half = V // 2
        R = p.rebind
        keys = sample_distinct(rng, n, D, 1, half)
        values = sample_distinct(rng, n, D + R, half, V)  # [n, D + R]: the last R are the new bindings
        values, new_values = values[:, :D], values[:, D:]
        block = 2 * D
        context = block * p.num_passes + 2 * R
        space = (T - context) // 2
        weights = p.power_a * np.arange(1, space + 1, dtype=np.float64) ** (p.power_a - 1)
        gaps = weighted_sample_distinct(rng, n, D, weights / weights.sum())

        inputs = np.zeros((n, T), dtype=np.int64)
        for start in range(0, block * p.num_passes, block):  # each pass writes the same pairs in the same order
            inputs[:, start:start + block:2] = keys
            inputs[:, start + 1:start + block:2] = values
        answer_at = np.arange(context - 2 * R - block + 1, context - 2 * R, 2)[None, :].repeat(n, 0)  # [n, D]
        latest = values.copy()
        if R:  # forgetting MQAR: R of the keys (distinct, in random order) bound again to new values
            rebound = np.argsort(rng.random((n, D)), axis=1)[:, :R]   # [n, R] indices into the D pairs
            start = block * p.num_passes
            inputs[:, start:context:2] = np.take_along_axis(keys, rebound, axis=1)
            inputs[:, start + 1:context:2] = new_values
            np.put_along_axis(latest, rebound, new_values, axis=1)
            np.put_along_axis(answer_at, rebound, np.arange(start + 1, context, 2)[None, :].repeat(n, 0), axis=1)
        query_pos = context + 2 * gaps
        np.put_along_axis(inputs, query_pos, keys, axis=1)
        targets = np.full((n, T), IGNORE, dtype=np.int64)
        np.put_along_axis(targets, query_pos, latest, axis=1)
        answers = np.full((n, T), -1, dtype=np.int64)
        np.put_along_axis(answers, query_pos, answer_at, axis=1)
        collisions = np.zeros(n, dtype=np.int64)
        if p.random_non_queries:
            filler = inputs == 0
            if p.filler_vocab:  # disjoint from keys and values
                inputs[filler] = rng.integers(V, V + p.filler_vocab, size=int(filler.sum()))
            else:  # as in Zoology: any token, so a filler token can repeat a key of the sequence
                inputs[filler] = rng.integers(0, V, size=int(filler.sum()))
                for lo in range(0, n, 4096):  # chunks bound the [rows, T, D] comparison's memory
                    rows = slice(lo, lo + 4096)
                    is_key = (inputs[rows, :, None] == keys[rows, None, :]).any(-1)
                    collisions[rows] = (filler[rows] & is_key).sum(axis=1)
        return Batch(torch.from_numpy(inputs), torch.from_numpy(targets),
                     {"num_kv_pairs": torch.full((n,), D, dtype=torch.long), "seq_len": torch.full((n,), T),
                      "num_passes": torch.full((n,), p.num_passes), "rebind": torch.full((n,), R),
                      "filler_collisions": torch.from_numpy(collisions)}, answers=torch.from_numpy(answers))
