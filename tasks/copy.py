"""Copy (Katharopoulos et al. 2020, section 4.1) and selective copy (MAD; Mamba)."""
from __future__ import annotations

import numpy as np
import torch
from pydantic import Field

from . import TASKS
from .base import GENERIC_READERS, IGNORE, Batch, Task, TaskParams, sample_distinct


def _length_reader(x, pos, span, fit):
    """Knows the word's length from where its first separator (0) stands, so it closes the copy
    with a separator exactly where the copy ends, and answers a random distinct symbol of the
    word everywhere else (no memory of which symbol comes where)."""
    tokens = x.tolist()
    n = tokens.index(0) if 0 in tokens else len(tokens)
    word = {t for t in tokens[:n] if span[0] <= t < span[1]}
    return [{0} if t == 2 * n else set(word) for t in pos.tolist()]


class CopyParams(TaskParams):
    num_symbols: int = Field(10, ge=1, description="alphabet size; symbols are tokens 1..num_symbols, 0 separates and pads")
    min_len: int = Field(32, ge=1, description="shortest word n")
    max_len: int = Field(62, ge=1, description="longest word n (n ~ U{min_len..max_len})")
    seq_len: int = Field(128, ge=4, description="padded sequence length")


@TASKS.register()  # under its `name`
class Copy(Task):
    """Copy a random word after a separator: ``w 0 w 0`` padded with 0; graded on the second copy and its end."""

    name = "copy"
    description = "copy a random word after a separator (Katharopoulos et al. 2020)"
    Params = CopyParams
    presets = {
        "default": dict(num_symbols=10, min_len=8, max_len=15, seq_len=32),
        "tiny": dict(num_symbols=4, min_len=2, max_len=5, seq_len=12),
        "paper": dict(num_symbols=10, min_len=32, max_len=62, seq_len=128),
    }
    preset_bases = {"paper": "default"}  # model and train settings of each preset not named like a global one
    slice_keys = ("length",)
    chance_rule = "a random symbol of the word (the closing separator counts as missed)"
    # ``order`` (the j-th symbol of the word at the j-th position of the copy) is the copy itself
    readers = tuple(r for r in GENERIC_READERS if r != "order")

    def answer_tokens(self):
        return 1, self.params.num_symbols + 1

    def own_readers(self):
        return {"length": _length_reader}

    @property
    def vocab_size(self) -> int:
        return self.params.num_symbols + 1

    def check(self):
        p = self.params
        if p.min_len > p.max_len:
            raise ValueError(f"copy needs min_len <= max_len, got min_len={p.min_len}, max_len={p.max_len}")
        if 2 * p.max_len + 2 > p.seq_len:
            raise ValueError(f"copy needs seq_len >= 2 x max_len + 2 (word, separator, copy, separator), got "
                             f"seq_len={p.seq_len}, max_len={p.max_len}")

    def token_names(self):
        return ["|"] + [chr(ord("a") + i) if i < 26 else f"s{i}" for i in range(self.params.num_symbols)]

    def _generate(self, n, rng):
        p = self.params
        T = p.seq_len
        length = rng.integers(p.min_len, p.max_len + 1, size=n)
        word = rng.integers(1, p.num_symbols + 1, size=(n, p.max_len))
        col = np.arange(T + 1)[None, :]
        L = length[:, None]
        first = col < L
        second = (col > L) & (col <= 2 * L)
        src = np.where(first, col, np.where(second, col - L - 1, 0)).clip(0, p.max_len - 1)
        seq = np.where(first | second, np.take_along_axis(word, src, axis=1), 0)
        inputs, nxt = seq[:, :-1], seq[:, 1:]
        graded = (col[:, :-1] >= L) & (col[:, :-1] <= 2 * L)  # predicts the copy and its closing separator
        targets = np.where(graded, nxt, IGNORE)
        return Batch(torch.from_numpy(inputs), torch.from_numpy(targets), {"length": torch.from_numpy(length)})


class SelectiveCopyParams(TaskParams):
    vocab_size: int = Field(16, ge=3, description="data tokens are [0, V-2); V-2 is blank, V-1 the copy token")
    seq_len: int = Field(256, ge=3, description="total length: context, copy token, and one slot per data token")
    num_tokens: int = Field(16, ge=1, description="data tokens scattered in the context, emitted in order")


@TASKS.register()  # under its `name`
class SelectiveCopy(Task):
    """Data tokens scattered among blanks, then a copy token; emit the data tokens in order."""

    name = "selective_copy"
    description = "emit the data tokens scattered among blanks, in order (MAD, Mamba)"
    Params = SelectiveCopyParams
    presets = {
        "default": dict(vocab_size=16, seq_len=64, num_tokens=8),
        "tiny": dict(vocab_size=8, seq_len=24, num_tokens=4),
        "mad": dict(vocab_size=16, seq_len=256, num_tokens=16),
        "mamba": dict(vocab_size=16, seq_len=4096, num_tokens=16),
    }
    preset_bases = {"mad": "default", "mamba": "default"}
    slice_keys = ("seq_len",)
    chance_rule = "a random distinct data token of the context"
    readers = tuple(r for r in GENERIC_READERS if r != "order")  # emitting the data tokens in order is the task

    def answer_tokens(self):
        return 0, self.params.vocab_size - 2

    def check(self):
        p = self.params
        if p.seq_len < 2 * p.num_tokens + 1:
            raise ValueError(f"selective_copy needs seq_len >= 2 x num_tokens + 1 (context holding the tokens, the "
                             f"copy token, an output slot per token), got seq_len={p.seq_len}, num_tokens={p.num_tokens}")

    def token_names(self):
        V = self.params.vocab_size
        return [str(i) for i in range(V - 2)] + [".", "COPY"]

    def _generate(self, n, rng):
        p = self.params
        V, T, N = p.vocab_size, p.seq_len, p.num_tokens
        context = T - N - 1
        blank, copy = V - 2, V - 1
        data = rng.integers(0, V - 2, size=(n, N))
        where = np.sort(sample_distinct(rng, n, N, 0, context), axis=1)
        inputs = np.full((n, T), blank, dtype=np.int64)
        np.put_along_axis(inputs, where, data, axis=1)
        inputs[:, context] = copy
        targets = np.full((n, T), IGNORE, dtype=np.int64)
        targets[:, context + 1:] = data  # the output slots after the copy token
        return Batch(torch.from_numpy(inputs), torch.from_numpy(targets), {"seq_len": torch.full((n,), T)})
