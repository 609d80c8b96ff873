r"""Multi-hop recall: variable tracking after RULER (Hsieh et al. 2024), at the token level.

``num_chains`` chains of assignments hide in a haystack of filler tokens. A chain binds a value
to a first name, ``VAR a = 7``, then passes it on ``hops`` times, ``VAR b = a``, ``VAR c = b``
(each link after the one it reads). The sequence ends with ``? x`` for a name x of one chain; the
target at ``x`` is the value x holds, reached after ``hop`` links (0: the first name). Names are
distinct; the chains' values are distinct, so the chance floor (a random value of the context) is
1/num_chains. With 2 chains of 1 hop, T = 24 (``.`` filler)::

    VAR n3 = 7 . . VAR n0 = 2 . VAR n5 = n3 . . VAR n1 = n0 . . ? n5
    target at the last token: 7 (n5 = n3 = 7, one hop)

Slices: ``hop`` (links followed from the queried name back to its value) and ``distance_bin``
(tenths of T between the value and the query).
"""
from __future__ import annotations

import numpy as np
import torch
from pydantic import Field

from . import TASKS
from .base import IGNORE, Batch, Task, TaskParams, sample_distinct

VAR, EQ, QUERY = 1, 2, 3  # 0 is unused (padding)
STATEMENT = 4            # tokens per statement: VAR name = (value or name)


class MultiHopParams(TaskParams):
    seq_len: int = Field(128, ge=6, description="total length: statements, filler, and the 2-token query")
    num_chains: int = Field(2, ge=1, description="chains of assignments (one is queried, the others distract)")
    hops: int = Field(2, ge=0, description="links per chain after its first binding")
    num_names: int = Field(32, ge=1, description="variable names")
    num_values: int = Field(16, ge=1, description="values")
    filler_vocab: int = Field(16, ge=1, description="haystack tokens, disjoint from the rest")


@TASKS.register()  # under its `name`
class MultiHop(Task):
    """Follow ``VAR b = a`` links back to the value bound at the start of the chain."""

    name = "multihop"
    description = "multi-hop recall: variable tracking (RULER) through chains of VAR b = a, in a haystack"
    Params = MultiHopParams
    presets = {
        "default": dict(seq_len=128, num_chains=2, hops=2),
        "tiny": dict(seq_len=32, num_chains=2, hops=1, num_names=8, num_values=4, filler_vocab=4),
        "ruler": dict(seq_len=512, num_chains=4, hops=4),  # RULER's default: 1 chain of 4 hops among distractors
    }
    preset_bases = {"ruler": "default"}
    slice_keys = ("hop", "distance_bin")
    chance_rule = "a random distinct value of the context (1/num_chains)"

    @property
    def value0(self) -> int:
        return 4 + self.params.num_names

    def answer_tokens(self):
        return self.value0, self.value0 + self.params.num_values

    @property
    def vocab_size(self):
        p = self.params
        return 4 + p.num_names + p.num_values + p.filler_vocab

    def check(self):
        p = self.params
        names = p.num_chains * (p.hops + 1)
        if names > p.num_names:
            raise ValueError(f"multihop needs num_names >= num_chains x (hops + 1) = {names} (distinct names), "
                             f"got num_names={p.num_names}")
        if p.num_chains > p.num_values:
            raise ValueError(f"multihop needs num_values >= num_chains (distinct values), got num_values={p.num_values}")
        need = STATEMENT * names + 2
        if p.seq_len < need:
            raise ValueError(f"multihop needs seq_len >= {need} ({names} statements of {STATEMENT} tokens and a "
                             f"2-token query), got seq_len={p.seq_len}")

    def token_names(self):
        p = self.params
        return (["_", "VAR", "=", "?"] + [f"n{i}" for i in range(p.num_names)] + [str(i) for i in range(p.num_values)]
                + ["."] * p.filler_vocab)

    def _generate(self, n, rng):
        p = self.params
        T, C, L = p.seq_len, p.num_chains, p.hops + 1  # L statements per chain
        S = C * L                                     # statements in all
        fill0 = self.value0 + p.num_values
        names = sample_distinct(rng, n, S, 4, self.value0).reshape(n, C, L)   # [n, chain, link]
        values = sample_distinct(rng, n, C, self.value0, fill0)              # [n, chain]

        # statement order: a random interleaving that keeps each chain's links in order
        owner = np.argsort(rng.random((n, S)), axis=1) % C  # chain of the statement in each slot
        link = np.zeros((n, S), dtype=np.int64)             # which link of its chain that slot holds
        for c in range(C):
            link += (np.cumsum(owner == c, axis=1) - 1) * (owner == c)
        F = T - 2 - STATEMENT * S                           # filler tokens
        insert = np.sort(rng.integers(0, F + 1, size=(n, S)), axis=1)  # filler tokens before each statement
        start = insert + STATEMENT * np.arange(S)[None, :]

        seq = rng.integers(fill0, fill0 + p.filler_vocab, size=(n, T))
        rows = np.arange(n)[:, None]
        name = names[rows, owner, link]
        rhs = np.where(link == 0, values[rows, owner], names[rows, owner, np.maximum(link - 1, 0)])
        for offset, tok in enumerate((np.full_like(name, VAR), name, np.full_like(name, EQ), rhs)):
            np.put_along_axis(seq, start + offset, tok, axis=1)

        chain = rng.integers(0, C, size=n)
        hop = rng.integers(0, L, size=n)
        r = np.arange(n)
        seq[:, -2] = QUERY
        seq[:, -1] = names[r, chain, hop]
        targets = np.full((n, T), IGNORE, dtype=np.int64)
        targets[:, -1] = values[r, chain]
        # where the value sits: the first statement of the queried chain
        first = np.argmax((owner == chain[:, None]) & (link == 0), axis=1)
        value_pos = start[r, first] + 3
        answers = np.full((n, T), -1, dtype=np.int64)
        answers[:, -1] = value_pos
        distance = (T - 1 - value_pos) / T
        return Batch(torch.from_numpy(seq), torch.from_numpy(targets),
                     {"hop": torch.from_numpy(hop), "seq_len": torch.full((n,), T),
                      "distance_bin": torch.from_numpy(np.minimum(distance * 10, 9).astype(np.int64))},
                     answers=torch.from_numpy(answers))
