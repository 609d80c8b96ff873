"""Needle in a haystack at the token level (the suite's own definition; see docs/TASKS.md).

A needle ``MARK k v`` sits at a chosen depth of a haystack; the sequence ends with ``MARK k`` and
the target is ``v``. Haystacks: ``repeat`` (a fixed pattern, low entropy) or ``random`` (filler
tokens disjoint from keys and values). Variants after RULER: distractor needles with other keys
(multi-key), several values for one key, answered in order of appearance (multi-value), and
several queries (multi-query).

Token ids: 0 pad, 1 MARK, keys [2, 2+K), values [2+K, 2+K+V), filler after that.
"""
from __future__ import annotations

from typing import Literal

import numpy as np
import torch
from pydantic import Field

from . import TASKS
from .base import IGNORE, Batch, Task, TaskParams, sample_distinct

PATTERN_LEN = 7  # the repeated haystack's period


class NeedleParams(TaskParams):
    seq_len: int = Field(256, ge=8, description="total length, haystack plus queries")
    depth: float | None = Field(None, ge=0, le=1, description="where the (first) needle sits, 0 = start, 1 = end of "
                                "the haystack; None draws it uniformly per example")
    haystack: Literal["random", "repeat"] = Field("random", description="random filler tokens, or a repeated fixed pattern")
    num_keys: int = Field(32, ge=1, description="key vocabulary")
    num_values: int = Field(32, ge=1, description="value vocabulary")
    filler_vocab: int = Field(32, ge=PATTERN_LEN, description="haystack tokens, disjoint from keys and values")
    num_distractors: int = Field(0, ge=0, description="needles with other keys (multi-key)")
    values_per_key: int = Field(1, ge=1, description="needles sharing the queried key, answered in order (multi-value)")
    num_queries: int = Field(1, ge=1, description="keys queried at the end (multi-query)")


@TASKS.register()  # under its `name`
class Needle(Task):
    """Find the value after ``MARK key`` hidden in a haystack; RULER-style variants."""

    name = "needle"
    description = "token-level needle in a haystack (depth, haystack kind, multi-key/value/query)"
    Params = NeedleParams
    presets = {
        # with no distractor the only value in the context is the answer (floor 1): every preset has some
        "default": dict(seq_len=128, num_distractors=3),
        "tiny": dict(seq_len=24, num_keys=8, num_values=8, filler_vocab=8, num_distractors=1),
        "multikey": dict(seq_len=256, num_distractors=3),
        "multivalue": dict(seq_len=256, values_per_key=2, num_distractors=2),
        "multiquery": dict(seq_len=256, num_queries=2, num_distractors=2),
    }
    preset_bases = {"multikey": "default", "multivalue": "default", "multiquery": "default"}
    slice_keys = ("seq_len", "depth_bin")
    chance_rule = "a random distinct needle value of the context (1 with a single needle: no preset has one)"

    def answer_tokens(self):
        p = self.params
        return 2 + p.num_keys, 2 + p.num_keys + p.num_values

    @property
    def vocab_size(self):
        p = self.params
        return 2 + p.num_keys + p.num_values + p.filler_vocab

    @property
    def num_needles(self):
        p = self.params
        return p.num_queries * p.values_per_key + p.num_distractors

    @property
    def tail_len(self):
        p = self.params
        return p.num_queries * (p.values_per_key + 1)

    def check(self):
        p = self.params
        if p.num_queries + p.num_distractors > p.num_keys:
            raise ValueError(f"needle needs num_keys >= num_queries + num_distractors (distinct keys), got "
                             f"num_keys={p.num_keys}")
        if p.values_per_key > p.num_values:
            raise ValueError(f"needle needs num_values >= values_per_key (distinct values), got num_values={p.num_values}")
        need = self.tail_len + 3 * self.num_needles + 1
        if p.seq_len < need:
            raise ValueError(f"needle needs seq_len >= {need} ({self.num_needles} needles of 3 tokens, "
                             f"{self.tail_len} query tokens, a haystack), got seq_len={p.seq_len}")

    def token_names(self):
        p = self.params
        return (["_", "MARK"] + [f"k{i}" for i in range(p.num_keys)] + [f"v{i}" for i in range(p.num_values)]
                + [f"h{i}" for i in range(p.filler_vocab)])

    def _generate(self, n, rng):
        p = self.params
        T, Q, M, N = p.seq_len, p.num_queries, p.values_per_key, self.num_needles
        key0, val0, fill0 = 2, 2 + p.num_keys, 2 + p.num_keys + p.num_values
        H = T - self.tail_len
        F = H - 3 * N  # filler tokens in the haystack

        keys = sample_distinct(rng, n, Q + p.num_distractors, key0, val0)
        # needle j: queried key j // M for j < Q*M, then the distractors
        needle_keys = np.concatenate([np.repeat(keys[:, :Q], M, axis=1), keys[:, Q:]], axis=1)
        qvals = np.concatenate([sample_distinct(rng, n, M, val0, fill0) for _ in range(Q)], axis=1) if Q else None
        dvals = rng.integers(val0, fill0, size=(n, p.num_distractors))
        needle_vals = np.concatenate([qvals, dvals], axis=1)

        depth = rng.random(n) if p.depth is None else np.full(n, p.depth)
        insert = rng.integers(0, F + 1, size=(n, N))
        insert[:, 0] = np.rint(depth * F).astype(np.int64)  # needle 0 sits at the requested depth
        order = np.lexsort((rng.random((n, N)), insert), axis=1)  # by insertion point, random among ties
        sorted_ins = np.take_along_axis(insert, order, axis=1)
        rank = np.argsort(order, axis=1)
        start = insert + 3 * rank  # where each needle begins

        if p.haystack == "random":
            filler = rng.integers(fill0, fill0 + p.filler_vocab, size=(n, F))
        else:
            filler = np.broadcast_to(fill0 + np.arange(F) % PATTERN_LEN, (n, F))
        seq = np.zeros((n, T), dtype=np.int64)
        cols = np.arange(F)
        before = (sorted_ins[:, None, :] <= cols[None, :, None]).sum(-1)  # needles inserted before filler i
        np.put_along_axis(seq, cols[None, :] + 3 * before, filler, axis=1)
        for offset, tokens in enumerate((np.ones_like(needle_keys), needle_keys, needle_vals)):
            np.put_along_axis(seq, start + offset, tokens, axis=1)

        targets = np.full((n, T), IGNORE, dtype=np.int64)
        answer_pos = np.full((n, T), -1, dtype=np.int64)
        pos = H
        for q in range(Q):
            block = slice(q * M, (q + 1) * M)
            by_position = np.argsort(start[:, block], axis=1)
            answers = np.take_along_axis(needle_vals[:, block], by_position, axis=1)
            seq[:, pos], seq[:, pos + 1] = 1, keys[:, q]
            seq[:, pos + 2:pos + 1 + M] = answers[:, :-1]  # earlier answers are teacher-forced
            targets[:, pos + 1:pos + 1 + M] = answers
            answer_pos[:, pos + 1:pos + 1 + M] = np.take_along_axis(start[:, block], by_position, axis=1) + 2
            pos += M + 1
        actual_depth = start[:, 0] / max(H - 3, 1)
        return Batch(torch.from_numpy(seq), torch.from_numpy(targets),
                     {"depth": torch.from_numpy(actual_depth), "depth_bin": torch.from_numpy(np.minimum(actual_depth * 10, 9).astype(np.int64)),
                      "seq_len": torch.full((n,), T)}, answers=torch.from_numpy(answer_pos))
