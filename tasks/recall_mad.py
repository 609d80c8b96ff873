"""MAD's in-context recall (Poli et al. 2024): keys drawn with replacement, each keeps its value.

A sequence is T/2 items ``k v``; keys come from [0, V/2) and values from [V/2, V), with one
random key -> value map per sequence. The last item probes a key seen earlier. Training uses
every next-token position; accuracy counts only the values whose key appeared before (the ones
that can be recalled). ``noise_fraction`` turns items into pairs of noise tokens (noisy recall).
"""
from __future__ import annotations

import numpy as np
import torch
from pydantic import Field

from . import TASKS
from .base import IGNORE, Batch, Task, TaskParams


class MadRecallParams(TaskParams):
    vocab_size: int = Field(16, ge=4, description="keys [0, V/2), values [V/2, V)")
    seq_len: int = Field(128, ge=4, description="sequence length (an even number of tokens)")
    noise_fraction: float = Field(0.0, ge=0, lt=1, description="share of items replaced by two noise tokens")
    noise_vocab: int = Field(16, ge=1, description="noise tokens, ids [V, V + noise_vocab), when noise_fraction > 0")


@TASKS.register()  # under its `name`
class MadRecall(Task):
    """MAD in-context recall (and noisy recall with noise_fraction > 0)."""

    name = "recall_mad"
    description = "MAD in-context recall: keys with replacement, final probe; noisy variant"
    Params = MadRecallParams
    presets = {
        "default": dict(vocab_size=16, seq_len=64),
        "tiny": dict(vocab_size=8, seq_len=16),
        "mad": dict(vocab_size=16, seq_len=128),
        "mad-noisy": dict(vocab_size=16, seq_len=128, noise_fraction=0.2),
    }
    preset_bases = {"mad": "default", "mad-noisy": "default"}
    slice_keys = ("seq_len",)
    chance_rule = "a random distinct value of the context so far"

    def answer_tokens(self):
        return self.params.vocab_size // 2, self.params.vocab_size

    @property
    def vocab_size(self):
        p = self.params
        return p.vocab_size + (p.noise_vocab if p.noise_fraction > 0 else 0)

    def check(self):
        if self.params.seq_len % 2:
            raise ValueError(f"recall_mad needs an even seq_len (key-value items), got {self.params.seq_len}")

    def token_names(self):
        half = self.params.vocab_size // 2
        return ([f"k{i}" for i in range(half)] + [f"v{i}" for i in range(self.params.vocab_size - half)]
                + [f"n{i}" for i in range(self.vocab_size - self.params.vocab_size)])

    def _generate(self, n, rng):
        p = self.params
        V, T = p.vocab_size, p.seq_len
        half, items = V // 2, T // 2
        mapping = rng.integers(half, V, size=(n, half))  # this sequence's value for each key
        keys = rng.integers(0, half, size=(n, items))
        noise = rng.random((n, items)) < p.noise_fraction
        noise[:, 0] = False  # the probe needs at least one real item before it
        noise[:, -1] = False
        # the probe repeats the key of a random earlier real item
        weights = np.where(noise[:, :-1], 0.0, rng.random((n, items - 1)))
        keys[:, -1] = np.take_along_axis(keys, weights.argmax(1)[:, None], axis=1)[:, 0]
        values = np.take_along_axis(mapping, keys, axis=1)
        seq = np.empty((n, T), dtype=np.int64)
        seq[:, 0::2], seq[:, 1::2] = keys, values
        noise_tokens = rng.integers(V, V + p.noise_vocab, size=(n, T))
        seq = np.where(np.repeat(noise, 2, axis=1), noise_tokens, seq)

        inputs = seq
        targets = np.full((n, T), IGNORE, dtype=np.int64)
        targets[:, :-1] = seq[:, 1:]  # every next token is trained on
        # scored: a value position whose key occurred earlier in a real item
        real_key = np.where(noise, -1, keys)
        seen = np.zeros((n, items), dtype=bool)
        for j in range(1, items):  # loop over items (T/2), vectorised over examples
            seen[:, j] = (real_key[:, :j] == real_key[:, j:j + 1]).any(1)
        scored = np.zeros((n, T), dtype=bool)
        scored[:, 0::2] = seen & ~noise  # at key positions the next token is the value
        return Batch(torch.from_numpy(inputs), torch.from_numpy(targets), {"seq_len": torch.full((n,), T)},
                     scored=torch.from_numpy(scored))
