r"""Induction heads with length extrapolation (Olsson et al. 2022; the Mamba paper, Table 2).

Random data tokens from [0, V-1); the trigger token V-1 appears once at a random position,
followed by some token x, and again as the last token: the target there is x. Training uses one
length and the test segments longer ones (``eval_segments``), so a model must not rely on learned
positions (its runs use ``model.positions=none``; the short convolution supplies order). With
V = 6, T = 10 (trigger ``#``)::

    inputs   2 0 # 3 1 4 0 2 1 #
    targets  . . . . . . . . . 3

The chance floor is a random distinct data token of the context (about 1/(V-1) once T >> V).
"""
from __future__ import annotations

import numpy as np
import torch
from pydantic import Field

from . import TASKS
from .base import IGNORE, Batch, Task, TaskParams


class InductionParams(TaskParams):
    vocab_size: int = Field(16, ge=3, description="tokens: data [0, V-1), the trigger V-1")
    seq_len: int = Field(256, ge=4, description="sequence length T (the last token is the second trigger)")


# test lengths of the extrapolation presets: 2x ... 64x the training length 256 (2^9 ... 2^14)
MAMBA_TEST_LENGTHS = (512, 1024, 2048, 4096, 8192, 16384)


@TASKS.register()  # under its `name`
class Induction(Task):
    """Copy the token that followed the first trigger, at the second trigger; lengths beyond training."""

    name = "induction"
    description = "induction heads: the token after the earlier trigger, tested at lengths beyond training (Mamba Table 2)"
    Params = InductionParams
    presets = {
        # CPU: train at 64, test to 16x; few examples at the longest lengths keep softmax's T^2 cheap
        "default": dict(vocab_size=16, seq_len=64,
                        eval_segments=[{"seq_len": 128}, {"seq_len": 256}, {"seq_len": 1024, "num_test": 200}]),
        "tiny": dict(vocab_size=8, seq_len=16),
        # the Mamba paper: vocab 16, train 256, test 2^9 ... 2^14 here (the paper goes to 2^20)
        "mamba": dict(vocab_size=16, seq_len=256,
                      eval_segments=[{"seq_len": n, "num_test": max(50, min(500, 2 ** 17 // n))} for n in MAMBA_TEST_LENGTHS]),
    }
    preset_bases = {"default": "extrapolate", "mamba": "extrapolate"}
    slice_keys = ("seq_len", "distance_bin")
    chance_rule = "a random distinct data token of the context (about 1/(V-1))"

    def answer_tokens(self):
        return 0, self.params.vocab_size - 1

    def token_names(self):
        return [str(i) for i in range(self.params.vocab_size - 1)] + ["#"]

    def _generate(self, n, rng):
        V, T = self.params.vocab_size, self.params.seq_len
        trigger = V - 1
        seq = rng.integers(0, V - 1, size=(n, T))
        first = rng.integers(0, T - 2, size=n)  # the answer at first + 1 <= T - 2 precedes the final trigger
        rows = np.arange(n)
        seq[rows, first] = trigger
        seq[:, -1] = trigger
        targets = np.full((n, T), IGNORE, dtype=np.int64)
        targets[:, -1] = seq[rows, first + 1]
        answers = np.full((n, T), -1, dtype=np.int64)
        answers[:, -1] = first + 1
        distance = T - 1 - first  # tokens from the first trigger to the query
        return Batch(torch.from_numpy(seq), torch.from_numpy(targets),
                     {"seq_len": torch.full((n,), T), "distance_bin": torch.from_numpy(np.log2(distance).astype(np.int64))},
                     answers=torch.from_numpy(answers))
