r"""MAD's fuzzy in-context recall as mad-lab generates it (``generate_fuzzy_in_context_recall_instance``
in ``mad/data/instances.py``; configs/tasks/fuzzy-in-context-recall.yml: V 16, T 128, motifs of up to 3).

A stream of ``key value`` items fills the sequence: each key is 1 to ``k_motif_size`` distinct key
tokens (ids [0, H), H = (V - 1) // 2), each value 1 to ``v_motif_size`` distinct value tokens (ids
[H, V - 1)); token V - 1 pads on the left. A key keeps the value it was first given, so keys repeat
with their values. One probe item is planted at a random place and repeated at the end. Training
uses every next token (MAD's autoregressive shift); accuracy counts only the value tokens of keys
seen before in the sequence (MAD's multi-query test targets) and the final probe's value. The
``tiny`` preset (V 10, T 24, motifs of up to 2), seed 1, its third example, graded positions as
``[input => target]``: the key ``k2 k1`` comes back with its value ``v0 v3``, and is the probe::

    _ _ _ _ k3 k1 v2 k2 k1 v0 v3 k0 v1 v0 k2 [k1 => v0] [v0 => v3] v3 k1 k0 v4 k2 [k1 => v0] [v0 => v3]

Keys can begin alike (k2 k1 and k2 k0 are different keys) and a short key can begin a longer one
(k1 and k1 k0), which is what makes the recall fuzzy: the reader cannot know where a key ends
until the value starts.

As MAD: when the planted position falls past where the stream ends (it is drawn over
[0, T - 2 m) for a probe of m tokens, the stream stops near T - m - k_motif_size - v_motif_size),
the probe is not planted and the last value cannot be recalled unless its key happened to occur;
``meta["probe_planted"]`` says which examples these are (1.8% of 20,000 at MAD's baseline, V 16 and
T 128, about 0.25% of the graded tokens). Differences from mad-lab: MAD's test set
draws every key at ``k_motif_size`` tokens, ours draws test keys as training does unless
``longest_keys`` is set (an eval segment with it gives MAD's test distribution); our random draws
are not MAD's stream of numbers.
"""
from __future__ import annotations

import random

import numpy as np
import torch
from pydantic import Field

from . import TASKS
from .base import Batch, Task, TaskParams


class FuzzyMadParams(TaskParams):
    vocab_size: int = Field(16, ge=7, description="MAD's vocabulary: keys [0, H), values [H, V - 1), pad V - 1, "
                                                   "H = (V - 1) // 2")
    seq_len: int = Field(128, ge=16, description="sequence length")
    k_motif_size: int = Field(3, ge=1, description="a key is 1..k_motif_size distinct key tokens")
    v_motif_size: int = Field(3, ge=1, description="a value is 1..v_motif_size distinct value tokens")
    longest_keys: bool = Field(False, description="every key k_motif_size tokens (MAD's test set)")


@TASKS.register()  # under its `name`
class FuzzyRecallMad(Task):
    """MAD fuzzy in-context recall: a stream of multi-token keys that keep their multi-token values."""

    name = "fuzzy_recall_mad"
    description = "MAD fuzzy in-context recall as mad-lab generates it: a stream of 1-3 token keys and values"
    Params = FuzzyMadParams
    presets = {
        "default": dict(vocab_size=16, seq_len=64),
        "tiny": dict(vocab_size=10, seq_len=24, k_motif_size=2, v_motif_size=2),
        "mad": dict(vocab_size=16, seq_len=128),
    }
    preset_bases = {"mad": "default"}
    slice_keys = ("seq_len",)
    chance_rule = "a random distinct value token of the context so far"

    def _half(self) -> int:
        return (self.params.vocab_size - 1) // 2

    def answer_tokens(self):
        return self._half(), self.params.vocab_size - 1

    def check(self):
        p = self.params
        half = self._half()
        if p.k_motif_size > half or p.v_motif_size > p.vocab_size - 1 - half:
            raise ValueError(f"fuzzy_recall_mad needs k_motif_size <= {half} and v_motif_size <= "
                             f"{p.vocab_size - 1 - half} (a motif's tokens are distinct) at vocab_size={p.vocab_size}, "
                             f"got k_motif_size={p.k_motif_size}, v_motif_size={p.v_motif_size}")
        if p.seq_len < 4 * (p.k_motif_size + p.v_motif_size):
            raise ValueError(f"fuzzy_recall_mad needs seq_len >= 4 x (k_motif_size + v_motif_size) = "
                             f"{4 * (p.k_motif_size + p.v_motif_size)}, got seq_len={p.seq_len}")

    def token_names(self):
        half, V = self._half(), self.params.vocab_size
        return [f"k{i}" for i in range(half)] + [f"v{i}" for i in range(V - 1 - half)] + ["_"]

    def _generate(self, n, rng):
        p = self.params
        T, V = p.seq_len, p.vocab_size
        inputs = np.empty((n, T), dtype=np.int64)
        targets = np.empty((n, T), dtype=np.int64)
        scored = np.zeros((n, T), dtype=bool)
        planted = np.zeros(n, dtype=bool)
        for i in range(n):  # a stream of ragged items, as mad-lab builds it: one example at a time
            tokens, graded, planted[i] = self._stream(rng)
            # left-padded to T + 1 tokens, then shifted: position t reads full[t] and predicts full[t + 1]
            full = np.full(T + 1, V - 1, dtype=np.int64)
            full[T + 1 - len(tokens):] = tokens
            mask = np.zeros(T + 1, dtype=bool)
            mask[T + 1 - len(tokens):] = graded
            inputs[i], targets[i], scored[i] = full[:-1], full[1:], mask[1:]
        return Batch(torch.from_numpy(inputs), torch.from_numpy(targets),
                     {"seq_len": torch.full((n,), T), "probe_planted": torch.from_numpy(planted)},
                     scored=torch.from_numpy(scored))

    def _stream(self, rng) -> tuple[list[int], list[bool], bool]:
        """One sequence's tokens (at most T + 1), which of them are graded, and whether the probe
        was planted in the stream. Follows mad-lab's loop step by step."""
        p = self.params
        T, half, V = p.seq_len, self._half(), p.vocab_size
        key_vocab, value_vocab = range(half), range(half, V - 1)
        k_sizes = [p.k_motif_size] if p.longest_keys else list(range(1, p.k_motif_size + 1))
        v_sizes = list(range(1, p.v_motif_size + 1))
        r = random.Random(int(rng.integers(2**63)))  # small draws: the standard library's are ~10x cheaper

        def draw(vocab, sizes):  # a uniform permutation of `size` distinct tokens, as MAD's list of them
            return tuple(r.sample(vocab, r.choice(sizes)))

        k_probe, v_probe = draw(key_vocab, k_sizes), draw(value_vocab, v_sizes)
        probe_len = len(k_probe) + len(v_probe)
        probe_at = r.randrange(T - 2 * probe_len)
        tokens: list[int] = []
        graded: list[bool] = []
        values: dict[tuple, tuple] = {}  # key -> the value it keeps (mad-lab's kv_map)
        presented: set[tuple] = set()  # keys already in the sequence (its keys_presented)
        planted = False
        while len(tokens) < T - probe_len - (p.k_motif_size + p.v_motif_size):
            if len(tokens) >= probe_at and not planted:
                tokens += k_probe + v_probe
                graded += [False] * probe_len
                values[k_probe] = v_probe
                presented.add(k_probe)
                planted = True
                continue
            key = draw(key_vocab, k_sizes)
            if key == k_probe:  # the probe's key came up in the stream: it carries the probe's value
                value, planted = v_probe, True
            else:
                value = values.setdefault(key, draw(value_vocab, v_sizes))
            tokens += key + value
            graded += [False] * len(key) + [key in presented] * len(value)
            presented.add(key)
        tokens += k_probe + v_probe  # the final query: graded whether or not its key was planted
        graded += [False] * len(k_probe) + [True] * len(v_probe)
        return tokens, graded, planted
