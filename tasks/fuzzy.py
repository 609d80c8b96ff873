r"""MAD's fuzzy in-context recall (Poli et al. 2024): keys and values of several tokens each.

A sequence is ``num_pairs`` items ``key value``, each key a run of 1 to ``max_key_len`` key tokens
and each value a run of 1 to ``max_value_len`` value tokens (the token kind marks where one ends:
keys come from [1, K], values from [K+1, K+V]). No key of a sequence begins another, so a key is
complete at its last token, where its value is asked for. Then
``num_queries`` earlier keys are repeated, each followed by its value teacher-forced: the targets
are the value's tokens, predicted from the key's last token on. Short sequences are right-padded
with 0 (not graded). With 2 pairs, 1 query, T = 12::

    inputs   k2 k4 v1 | k3 v0 v2 | k3  v0  v2 _ _ _
    targets   .  .  . |  .  .  . | v0  v2   . . . .

The chance floor is a random distinct value token of the context so far.
"""
from __future__ import annotations

import numpy as np
import torch
from pydantic import Field

from . import TASKS
from .base import IGNORE, Batch, Task, TaskParams


class FuzzyParams(TaskParams):
    num_key_tokens: int = Field(16, ge=1, description="key tokens K (ids 1..K)")
    num_value_tokens: int = Field(16, ge=1, description="value tokens (ids K+1..K+V)")
    num_pairs: int = Field(8, ge=1, description="key-value items before the queries")
    max_key_len: int = Field(3, ge=1, description="a key is 1..max_key_len tokens")
    max_value_len: int = Field(3, ge=1, description="a value is 1..max_value_len tokens")
    num_queries: int = Field(4, ge=1, description="keys repeated at the end, each followed by its value")
    seq_len: int = Field(128, ge=4, description="padded length")


@TASKS.register()  # under its `name`
class FuzzyRecall(Task):
    """Recall a multi-token value given its multi-token key (MAD fuzzy recall)."""

    name = "fuzzy_recall"
    description = "MAD fuzzy in-context recall: keys and values of 1-3 tokens"
    Params = FuzzyParams
    presets = {
        "default": dict(num_pairs=8, num_queries=4, seq_len=72),
        "tiny": dict(num_key_tokens=6, num_value_tokens=6, num_pairs=3, num_queries=2, max_key_len=2,
                     max_value_len=2, seq_len=20),
        "mad": dict(num_pairs=16, num_queries=8, seq_len=144),
    }
    preset_bases = {"mad": "default"}
    slice_keys = ("seq_len",)
    chance_rule = "a random distinct value token of the context so far"

    def answer_tokens(self):
        k = self.params.num_key_tokens
        return k + 1, k + 1 + self.params.num_value_tokens

    @property
    def vocab_size(self):
        return 1 + self.params.num_key_tokens + self.params.num_value_tokens

    def check(self):
        p = self.params
        if p.num_queries > p.num_pairs:
            raise ValueError(f"fuzzy_recall needs num_queries <= num_pairs (distinct keys queried), got "
                             f"num_queries={p.num_queries}")
        if p.num_pairs > p.num_key_tokens:  # then a key with an unused first token always fits
            raise ValueError(f"fuzzy_recall needs num_pairs <= num_key_tokens (keys none of which begins another "
                             f"can always be drawn), got num_pairs={p.num_pairs}, num_key_tokens={p.num_key_tokens}")
        need = (p.num_pairs + p.num_queries) * (p.max_key_len + p.max_value_len)
        if p.seq_len < need:
            raise ValueError(f"fuzzy_recall needs seq_len >= (num_pairs + num_queries) x (max_key_len + "
                             f"max_value_len) = {need}, got seq_len={p.seq_len}")

    def token_names(self):
        k = self.params.num_key_tokens
        return ["_"] + [f"k{i}" for i in range(k)] + [f"v{i}" for i in range(self.params.num_value_tokens)]

    def _generate(self, n, rng):
        p = self.params
        K, T, P = p.num_key_tokens, p.seq_len, p.num_pairs
        inputs = np.zeros((n, T), dtype=np.int64)
        targets = np.full((n, T), IGNORE, dtype=np.int64)
        answers = np.full((n, T), -1, dtype=np.int64)
        key_len = rng.integers(1, p.max_key_len + 1, size=(n, P))
        value_len = rng.integers(1, p.max_value_len + 1, size=(n, P))
        key_tok = rng.integers(1, K + 1, size=(n, P, p.max_key_len))
        value_tok = rng.integers(K + 1, K + 1 + p.num_value_tokens, size=(n, P, p.max_value_len))
        queried = np.argsort(rng.random((n, P)), axis=1)[:, :p.num_queries]
        # per-example assembly: items are ragged; n x (P + Q) small list operations
        for i in range(n):
            keys: list[tuple] = []
            for j in range(P):  # redraw a key that begins another or that another begins (one with an unused first token fits)
                key = tuple(key_tok[i, j, :key_len[i, j]])
                while any(_prefix(key, other) for other in keys):
                    key_len[i, j] = rng.integers(1, p.max_key_len + 1)
                    key_tok[i, j] = rng.integers(1, K + 1, size=p.max_key_len)
                    key = tuple(key_tok[i, j, :key_len[i, j]])
                keys.append(key)
            pos, where = 0, []
            for j in range(P):
                kl, vl = key_len[i, j], value_len[i, j]
                inputs[i, pos:pos + kl] = key_tok[i, j, :kl]
                inputs[i, pos + kl:pos + kl + vl] = value_tok[i, j, :vl]
                where.append(pos + kl)
                pos += kl + vl
            for j in queried[i]:
                kl, vl = key_len[i, j], value_len[i, j]
                inputs[i, pos:pos + kl] = key_tok[i, j, :kl]
                inputs[i, pos + kl:pos + kl + vl] = value_tok[i, j, :vl]
                targets[i, pos + kl - 1:pos + kl + vl - 1] = value_tok[i, j, :vl]
                answers[i, pos + kl - 1:pos + kl + vl - 1] = where[j] + np.arange(vl)
                pos += kl + vl
        return Batch(torch.from_numpy(inputs), torch.from_numpy(targets), {"seq_len": torch.full((n,), T)},
                     answers=torch.from_numpy(answers))


def _prefix(a: tuple, b: tuple) -> bool:
    """One of the two keys begins the other (or they are equal)."""
    m = min(len(a), len(b))
    return a[:m] == b[:m]
