r"""Flip-flop language modelling (Liu et al. 2023, "Exposing Attention Glitches").

A sequence is T/2 instructions, each an instruction token then a bit: ``w b`` writes b, ``i b``
is ignored, ``r b`` reads, and its bit must equal the last written one. The first instruction is
a write and the last a read; the others are write, ignore or read with probabilities
``(1 - p_ignore)/2, p_ignore, (1 - p_ignore)/2``. Only the bits after ``r`` are graded (predicted
at ``r``). The paper trains at p_ignore = 0.8 (FFL(0.8)) and tests glitches on a sparse split,
p_ignore = 0.98, where reads come long after their write. T = 12::

    inputs   w 1 i 0 r 1 w 0 i 1 r 0
    targets  . . . . 1 . . . . . 0 .

Slices: ``distance_bin``, log2 of the tokens from the read back to the last write. The floor is a
random distinct bit of the context (0.5 once both bits have appeared).
"""
from __future__ import annotations

import numpy as np
import torch
from pydantic import Field

from . import TASKS
from .base import IGNORE, Batch, Task, TaskParams

ZERO, ONE, WRITE, IGNORE_TOKEN, READ = 0, 1, 2, 3, 4


class FlipFlopParams(TaskParams):
    seq_len: int = Field(128, ge=4, description="an even number of tokens: T/2 instructions with their bits")
    p_ignore: float = Field(0.8, ge=0, lt=1, description="probability of an ignore instruction (writes and reads "
                            "share the rest)")


@TASKS.register()  # under its `name`
class FlipFlop(Task):
    """Read back the last written bit, past ignore instructions."""

    name = "flipflop"
    description = "flip-flop: remember the last written bit across ignores; sparse-read test split (Liu et al. 2023)"
    Params = FlipFlopParams
    presets = {
        "default": dict(seq_len=128, p_ignore=0.8, eval_segments=[{"p_ignore": 0.98}]),
        "tiny": dict(seq_len=16),
        # the paper: T = 512, FFL(0.8) for training; sparse (0.98) and dense (0.1) test splits
        "paper": dict(seq_len=512, p_ignore=0.8, eval_segments=[{"p_ignore": 0.98}, {"p_ignore": 0.1}]),
    }
    preset_bases = {"paper": "default"}
    slice_keys = ("distance_bin",)
    chance_rule = "a random distinct bit of the context (0.5 once both have appeared)"

    @property
    def vocab_size(self):
        return 5

    def answer_tokens(self):
        return ZERO, ONE + 1

    def check(self):
        if self.params.seq_len % 2:
            raise ValueError(f"flipflop needs an even seq_len (instruction-bit pairs), got {self.params.seq_len}")

    def token_names(self):
        return ["0", "1", "w", "i", "r"]

    def _generate(self, n, rng):
        p = self.params
        T, N = p.seq_len, p.seq_len // 2
        u = rng.random((n, N))
        instr = np.where(u < p.p_ignore, IGNORE_TOKEN, np.where(u < (1 + p.p_ignore) / 2, WRITE, READ))
        instr[:, 0], instr[:, -1] = WRITE, READ
        bits = rng.integers(0, 2, size=(n, N))
        is_write = instr == WRITE
        # the index of the last write at or before each instruction
        last = np.maximum.accumulate(np.where(is_write, np.arange(N)[None, :], 0), axis=1)
        written = np.take_along_axis(bits, last, axis=1)
        is_read = instr == READ
        bits = np.where(is_read, written, bits)  # a read's bit is the last written bit
        seq = np.empty((n, T), dtype=np.int64)
        seq[:, 0::2], seq[:, 1::2] = instr, bits
        targets = np.full((n, T), IGNORE, dtype=np.int64)
        targets[:, 0::2] = np.where(is_read, bits, IGNORE)
        answers = np.full((n, T), -1, dtype=np.int64)
        answers[:, 0::2] = np.where(is_read, 2 * last + 1, -1)
        # distance of the example's last read (the one every example has) back to its write
        distance = 2 * (N - 1 - last[:, -1])
        return Batch(torch.from_numpy(seq), torch.from_numpy(targets),
                     {"seq_len": torch.full((n,), T), "distance_bin": torch.from_numpy(np.log2(distance).astype(np.int64))},
                     answers=torch.from_numpy(answers))
