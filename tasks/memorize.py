r"""MAD's memorisation (Poli et al. 2024): one fixed key -> value map, learned in the weights.

The contrast to in-context recall: the map is the same in every sequence (drawn once from
``map_seed``, not from the data seed), and each sequence uses distinct keys, so the context never
shows a key's value before it is asked for. A model scores here by storing the map in its
parameters, whatever its state; a mixer that is good here and poor at ``recall`` memorises but
does not recall in context. Keys are [0, V/2), values [V/2, V). With V = 8, T = 6 and the map
k0->v2, k1->v0, k2->v3, k3->v1::

    inputs   k2 v3 k0 v2 k3 v1
    targets  v3  . v2  . v1  .

The floor is the majority-class rate (about 2/V: the context holds no answer).
"""
from __future__ import annotations

import numpy as np
import torch
from pydantic import Field

from . import TASKS
from .base import GENERIC_READERS, IGNORE, Batch, Task, TaskParams, sample_distinct


class MemorizeParams(TaskParams):
    vocab_size: int = Field(256, ge=4, description="keys [0, V/2), values [V/2, V)")
    seq_len: int = Field(32, ge=2, description="an even number of tokens: T/2 distinct keys, each followed by its value")
    map_seed: int = Field(0, ge=0, le=2**31 - 1, description="seed of the fixed key -> value map (shared by every split)")


@TASKS.register()  # under its `name`
class Memorize(Task):
    """Each key's value comes from one map fixed across the dataset (MAD memorisation)."""

    name = "memorize"
    description = "MAD memorisation: a fixed key -> value map learned in the weights (contrast to in-context recall)"
    Params = MemorizeParams
    presets = {
        "default": dict(vocab_size=256, seq_len=32),
        "tiny": dict(vocab_size=16, seq_len=8),
        "mad": dict(vocab_size=256, seq_len=32),
    }
    preset_bases = {"mad": "default"}
    slice_keys = ("seq_len",)
    chance_rule = "majority class (the context never holds the answer)"
    # ``bigram`` (the value seen after each key in training) is the map the task asks a model to store
    readers = tuple(r for r in GENERIC_READERS if r != "bigram")

    def check(self):
        p = self.params
        if p.seq_len % 2:
            raise ValueError(f"memorize needs an even seq_len (key-value items), got {p.seq_len}")
        if p.seq_len // 2 > p.vocab_size // 2:
            raise ValueError(f"memorize needs seq_len / 2 <= vocab_size / 2 distinct keys per sequence, got "
                             f"seq_len={p.seq_len}, vocab_size={p.vocab_size}")

    def mapping(self) -> np.ndarray:
        """The fixed map: ``mapping()[k]`` is key k's value token."""
        V = self.params.vocab_size
        return np.random.default_rng(self.params.map_seed).integers(V // 2, V, size=V // 2)

    def token_names(self):
        half = self.params.vocab_size // 2
        return [f"k{i}" for i in range(half)] + [f"v{i}" for i in range(self.params.vocab_size - half)]

    def _generate(self, n, rng):
        V, T = self.params.vocab_size, self.params.seq_len
        keys = sample_distinct(rng, n, T // 2, 0, V // 2)
        values = self.mapping()[keys]
        inputs = np.empty((n, T), dtype=np.int64)
        inputs[:, 0::2], inputs[:, 1::2] = keys, values
        targets = np.full((n, T), IGNORE, dtype=np.int64)
        targets[:, 0::2] = values
        return Batch(torch.from_numpy(inputs), torch.from_numpy(targets), {"seq_len": torch.full((n,), T)})
