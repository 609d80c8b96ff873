r"""MAD's compression (Poli et al. 2024; mad-lab ``generate_compression_instance``): T - 1 random
tokens and a compression token; the model reads the whole sequence and must reproduce every token
from its encoding at the last position alone.

Tokens are [0, V - 1); V - 1 is the compression token. With V = 8, T = 6::

    inputs   3 0 6 6 2 C
    targets  3 0 6 6 2 C      (every position, the compression token too, as MAD's generator)

A causal language model would copy the input at each position, so the task is read by the
autoencoder readout (``model.readout = "autoencoder"``, set when the task is chosen): the
hidden state at the last position, plus a sinusoidal position, through a 2-layer MLP, as MAD's
``AutoEncoder`` (global pool "last"). Deviations: our tied unembedding instead of its own linear;
the backbone's learned encoder positions where MAD's benchmark has none; no noise variant (MAD's
benchmark configuration uses none). The floor: readers that see no token of the sequence
(``majority``, ``position``), about 1 / (V - 1): every other reader reads the tokens it must
reproduce.
"""
from __future__ import annotations

import numpy as np
import torch
from pydantic import Field

from . import TASKS
from .base import Batch, Task, TaskParams


class CompressionParams(TaskParams):
    vocab_size: int = Field(16, ge=3, description="tokens: [0, V - 1) random, V - 1 the compression token")
    seq_len: int = Field(32, ge=2, description="sequence length T: T - 1 random tokens and the compression token")


@TASKS.register()
class Compression(Task):
    name = "compression"
    description = "MAD compression: reproduce every token from the sequence's encoding at its last position"
    Params = CompressionParams
    presets = {
        "default": dict(vocab_size=16, seq_len=32),
        "tiny": dict(vocab_size=8, seq_len=12),
        "mad": dict(vocab_size=16, seq_len=32),  # MAD's baseline (12,800 training examples)
    }
    preset_bases = {"mad": "default"}
    slice_keys = ("seq_len",)
    readers = ("majority", "position")   # every other reader reads the tokens it must reproduce
    readout = "autoencoder"

    def token_names(self) -> list[str]:
        return [str(i) for i in range(self.params.vocab_size - 1)] + ["C"]

    def _generate(self, n: int, rng: np.random.Generator) -> Batch:
        V, T = self.params.vocab_size, self.params.seq_len
        inputs = np.empty((n, T), dtype=np.int64)
        inputs[:, :-1] = rng.integers(0, V - 1, size=(n, T - 1))
        inputs[:, -1] = V - 1
        x = torch.from_numpy(inputs)
        return Batch(x, x.clone(), {"seq_len": torch.full((n,), T)})
