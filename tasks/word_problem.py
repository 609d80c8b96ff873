r"""State tracking: group word problems, parity among them (Merrill et al. 2024, "The Illusion of
State"; the DeltaProduct paper's recipe: train length 128, test 512).

The input is a word g_1 g_2 ... g_T of elements of a finite group G (tokens are the elements'
indices); the target at every position t is the running product p_t = g_1 g_2 ... g_t. A model
with a fixed state solves it only by tracking p_t: Z2 is parity of a bit string, S3 the smallest
non-abelian group, A5 and S5 the smallest non-solvable ones (beyond TC^0 for fixed-depth
transformers and for diagonal or non-negative linear RNNs). Elements of S_n are permutations
(tuples; ``(a b)[i] = a[b[i]]``), listed in lexicographic order so that index 0 is the identity;
A5 keeps S5's even ones. Parity (G = Z2, so 0 is the identity and 1 the flip), T = 6::

    inputs   1 0 1 1 0 1
    targets  1 1 0 1 1 0

The floor is the majority-class rate (about 1/|G|): the answer is never a token to copy.
Longer test lengths go in ``eval_segments``; ``positions=none`` models only (the ``extrapolate``
model settings).
"""
from __future__ import annotations

import itertools
from functools import lru_cache
from typing import Literal

import numpy as np
import torch
from pydantic import Field

from . import TASKS
from .base import Batch, Task, TaskParams

Group = Literal["Z2", "S3", "A5", "S5"]


@lru_cache(maxsize=None)
def elements(group: str) -> tuple[tuple[int, ...], ...]:
    """The group's elements as permutations, identity first (Z2 as the permutations of 2 points)."""
    n = {"Z2": 2, "S3": 3, "A5": 5, "S5": 5}[group]
    perms = list(itertools.permutations(range(n)))
    if group == "A5":
        perms = [p for p in perms if sum(p[i] > p[j] for i in range(n) for j in range(i + 1, n)) % 2 == 0]
    return tuple(perms)


@lru_cache(maxsize=None)
def table(group: str) -> np.ndarray:
    """``table(G)[a, b]``: the index of the product of elements a and b."""
    els = elements(group)
    index = {p: i for i, p in enumerate(els)}
    return np.array([[index[tuple(a[i] for i in b)] for b in els] for a in els], dtype=np.int64)


class WordProblemParams(TaskParams):
    group: Group = Field("Z2", description="Z2 (parity), S3, A5 or S5")
    seq_len: int = Field(64, ge=1, description="word length T (every position is labelled)")


@TASKS.register()  # under its `name`
class WordProblem(Task):
    """The running product of a word of group elements, at every position."""

    name = "word_problem"
    description = "state tracking: running product of Z2 (parity), S3, A5 or S5 elements (Illusion of State)"
    Params = WordProblemParams
    presets = {
        # parity: train 64, test 4x longer (Grazzi et al. train on short strings and test on longer ones)
        "default": dict(group="Z2", seq_len=64, eval_segments=[{"seq_len": 256, "num_test": 200}]),
        "tiny": dict(group="Z2", seq_len=16),
        "s3": dict(group="S3", seq_len=128, eval_segments=[{"seq_len": 512, "num_test": 200}]),
        "a5": dict(group="A5", seq_len=128, eval_segments=[{"seq_len": 512, "num_test": 200}]),
        # the DeltaProduct paper's recipe: train 128, test 512
        "s5": dict(group="S5", seq_len=128, eval_segments=[{"seq_len": 512, "num_test": 200}]),
    }
    preset_bases = {"default": "extrapolate", "s3": "extrapolate", "a5": "extrapolate", "s5": "extrapolate"}
    slice_keys = ("seq_len",)
    chance_rule = "majority class (about 1/|G|: the running product is never in the input)"

    @property
    def vocab_size(self):
        return len(elements(self.params.group))

    def token_names(self):
        if self.params.group == "Z2":
            return ["0", "1"]
        return ["".join(map(str, p)) for p in elements(self.params.group)]

    def _generate(self, n, rng):
        G, T = self.params.group, self.params.seq_len
        mul = table(G)
        words = rng.integers(0, len(mul), size=(n, T))
        prefix = np.empty_like(words)
        prefix[:, 0] = words[:, 0]
        for t in range(1, T):  # a scan over T, vectorised over examples
            prefix[:, t] = mul[prefix[:, t - 1], words[:, t]]
        return Batch(torch.from_numpy(words), torch.from_numpy(prefix), {"seq_len": torch.full((n,), T)})
