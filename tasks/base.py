"""What every task is: validated parameters in, a reproducible `Batch` out."""
from __future__ import annotations

import os

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import torch
from pydantic import ConfigDict

from evalsuite.params import Params

IGNORE = -100  # target value at positions that are not graded
# the readers (``tasks.readers``) that keep no memory of what a task tests, unless it says otherwise
GENERIC_READERS = ("majority", "bigram", "position", "random_context", "most_frequent", "last", "current", "previous",
                   "first", "elimination", "order")
FLOOR_WARNING = 0.9  # a configuration whose floor is above this leaves too little room to learn
LONG_ONLY = 1024  # recall trained on one length this long or longer: Zoology's users saw 0 test accuracy


def long_only_warning(train_tasks: list) -> str | None:
    """A warning for recall trained on a single long length (HazyResearch/zoology issue 24: every
    model trained only on very long sequences, e.g. T 4096 with 256 pairs, scored 0 on the test
    set; a mixture of short and long ones generalises), else None."""
    if len(train_tasks) != 1 or not hasattr(train_tasks[0].params, "num_kv_pairs"):
        return None
    T = train_tasks[0].params.seq_len
    if T < LONG_ONLY:
        return None
    return (f"trained on one length only (T={T}): recall models trained only on long sequences often fail to learn "
            f"at all (Zoology issue 24); train on a mixture of short and long ones (task.segments; the presets "
            f"mixture and zoology-mixture do)")


class TaskParams(Params):
    """Base for a task's parameters: unknown keys are errors, values are checked on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=True)


@dataclass
class Batch:
    """``inputs``/``targets`` are ``torch.long [n, T]``; ``meta`` holds per-example tensors ``[n]``.

    ``scored`` (optional, bool ``[n, T]``) marks the graded positions that count for accuracy when a
    task trains on more positions than it scores (MAD's in-context recall). ``answers`` (optional,
    long ``[n, T]``) is, at each graded position, where the generator put the token it asks for
    (the queried pair's value), -1 elsewhere; the analysis reads it instead of searching."""

    inputs: torch.Tensor
    targets: torch.Tensor
    meta: dict[str, torch.Tensor] = field(default_factory=dict)
    scored: torch.Tensor | None = None
    answers: torch.Tensor | None = None

    def __len__(self) -> int:
        return self.inputs.shape[0]

    @property
    def score_mask(self) -> torch.Tensor:
        graded = self.targets != IGNORE
        return graded if self.scored is None else graded & self.scored

    def __getitem__(self, index) -> "Batch":
        return Batch(self.inputs[index], self.targets[index], {k: v[index] for k, v in self.meta.items()},
                     None if self.scored is None else self.scored[index],
                     None if self.answers is None else self.answers[index])

    def to(self, device) -> "Batch":
        return Batch(self.inputs.to(device, non_blocking=True), self.targets.to(device, non_blocking=True),
                     {k: v.to(device) for k, v in self.meta.items()},
                     None if self.scored is None else self.scored.to(device),
                     None if self.answers is None else self.answers.to(device))

    def padded(self, length: int) -> "Batch":
        """Right-padded to ``length`` with token 0 and ungraded targets (harmless to causal models)."""
        pad = length - self.inputs.shape[1]
        if pad <= 0:
            return self
        f = torch.nn.functional.pad
        return Batch(f(self.inputs, (0, pad), value=0), f(self.targets, (0, pad), value=IGNORE), self.meta,
                     None if self.scored is None else f(self.scored, (0, pad), value=False),
                     None if self.answers is None else f(self.answers, (0, pad), value=-1))

    @staticmethod
    def concat(batches: list["Batch"]) -> "Batch":
        """Concatenate examples of possibly different lengths (padded to the longest)."""
        length = max(b.inputs.shape[1] for b in batches)
        batches = [b.padded(length) for b in batches]
        keys = set.intersection(*(set(b.meta) for b in batches))
        scored = None
        if any(b.scored is not None for b in batches):
            scored = torch.cat([b.score_mask for b in batches])
        answers = None
        if all(b.answers is not None for b in batches):
            answers = torch.cat([b.answers for b in batches])
        return Batch(torch.cat([b.inputs for b in batches]), torch.cat([b.targets for b in batches]),
                     {k: torch.cat([b.meta[k] for b in batches]) for k in keys}, scored, answers)


class Task:
    """A task family. Subclasses set ``name``, ``Params``, ``presets`` and implement ``_generate``."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    Params: ClassVar[type[TaskParams]] = TaskParams
    # preset name -> parameter overrides; "default" must fit a laptop CPU
    presets: ClassVar[dict[str, dict]] = {}
    # per-example metadata keys that accuracy is broken down by
    # the model and train preset (``config.PRESETS``) that each task preset runs with: its own name
    # when a global preset has it, else the one named here (resolving refuses a preset with neither)
    preset_bases: ClassVar[dict[str, str]] = {}
    slice_keys: ClassVar[tuple[str, ...]] = ()
    # the task's chance floor, in words (``context_chance`` computes it)
    chance_rule: ClassVar[str] = "majority class: always answer the most common test target"
    # the readers of ``tasks.readers`` that use no memory of what this task tests (the floor is the
    # best of them, plus ``own_readers``): a reader that would be the task's own solution is left out
    readers: ClassVar[tuple[str, ...]] = GENERIC_READERS
    # the model readout the task is read by (``model.readout``; compression: "autoencoder")
    readout: ClassVar[str] = "causal"

    def __init__(self, **params):
        self.params = self.Params(**params)
        self.check()

    # --- to override -------------------------------------------------------------------------
    def check(self) -> None:
        """Raise ``ValueError`` naming the parameter when the combination is impossible."""

    @property
    def vocab_size(self) -> int:
        return self.params.vocab_size

    @property
    def seq_len(self) -> int:
        return self.params.seq_len

    def _generate(self, n: int, rng: np.random.Generator) -> Batch:
        raise NotImplementedError

    def token_names(self) -> list[str]:
        """A printable name for every token id (``decode`` uses it)."""
        return [str(i) for i in range(self.vocab_size)]

    def answer_tokens(self) -> tuple[int, int] | None:
        """``[lo, hi)``: the tokens that can be answers, when the answers are read from the context
        (then the floor is ``context_floor``); ``None`` means the floor is the majority rate."""
        return None

    def context_chance(self, batch: Batch) -> float:
        """The chance floor: the accuracy of a reader that knows the task's format but not the
        answer. Where answers are read from the context, it answers a uniformly random distinct
        answer token seen so far at each scored position (MQAR: 1/D); else the majority rate."""
        span = self.answer_tokens()
        return majority_rate(batch) if span is None else context_floor(batch, *span)

    def own_readers(self) -> dict:
        """Readers particular to this task (name -> ``tasks.readers.Reader``), added to ``readers``."""
        return {}

    # --- shared ------------------------------------------------------------------------------
    def generate(self, n: int, seed: int, cache_dir: str | os.PathLike | None = None) -> Batch:
        """``n`` examples; the same seed and parameters give identical tensors. ``cache_dir``: where
        a task that is slow to generate (ListOps) may keep generated sets; others ignore it."""
        if n < 1:
            raise ValueError(f"n must be a positive number of examples, got {n}")
        return self._generate(int(n), np.random.default_rng(np.random.SeedSequence([int(seed), _stable_hash(self.name)])))

    def decode(self, ids) -> list[str]:
        """Token ids (a sequence or 1-d tensor) as readable strings."""
        names = self.token_names()
        return [names[i] if 0 <= i < len(names) else f"<{i}>" for i in (ids.tolist() if hasattr(ids, "tolist") else ids)]

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.model_dump().items())
        return f"{type(self).__name__}({args})"


def majority_rate(batch: Batch) -> float:
    """Accuracy of always answering the most common scored target."""
    targets = batch.targets[batch.score_mask]
    return float(torch.bincount(targets).max()) / targets.numel() if targets.numel() else 0.0


def context_floor(batch: Batch, lo: int, hi: int, chunk: int = 256) -> float:
    """Mean over scored positions t of [target in C_t] / |C_t|, C_t the distinct tokens of
    ``[lo, hi)`` in ``inputs[:t+1]``: the accuracy of answering a random candidate from the context."""
    mask = batch.score_mask
    total, hits = int(mask.sum()), 0.0
    if total == 0:
        return 0.0
    for start in range(0, len(batch), chunk):
        x, y, m = (t[start:start + chunk] for t in (batch.inputs, batch.targets, mask))
        inside = (x >= lo) & (x < hi)
        onehot = torch.zeros(*x.shape, hi - lo, dtype=torch.bool)
        onehot[inside] = torch.nn.functional.one_hot(x[inside] - lo, hi - lo).bool()
        seen = onehot.cummax(dim=1).values                              # [n, T, R] seen by position t
        count = seen.sum(-1)                                            # [n, T]
        y_in = (y >= lo) & (y < hi)
        has = torch.zeros_like(count, dtype=torch.bool)
        has[y_in] = seen[y_in].gather(-1, (y[y_in] - lo)[:, None]).squeeze(-1)
        hits += float((m & has).float().div(count.clamp_min(1)).sum())
    return hits / total


def _stable_hash(text: str) -> int:
    # Python's hash() is salted per process; streams must not depend on it.
    return int.from_bytes(text.encode()[:8].ljust(8, b"\0"), "little")


def sample_distinct(rng: np.random.Generator, n: int, k: int, low: int, high: int) -> np.ndarray:
    """``n`` rows of ``k`` distinct integers from ``[low, high)``, uniformly, without a per-row loop."""
    size = high - low
    if k > size:
        raise ValueError(f"cannot draw {k} distinct values from a range of {size}")
    if k * k < size:  # collisions are rare: draw with replacement and redraw the rows that collide
        out = rng.integers(low, high, size=(n, k))
        while True:
            s = np.sort(out, axis=1)
            bad = np.flatnonzero((s[:, 1:] == s[:, :-1]).any(axis=1))
            if bad.size == 0:
                return out
            out[bad] = rng.integers(low, high, size=(bad.size, k))
    # dense case: argsort of uniform noise is a uniform permutation; take its first k
    rows = []
    step = max(1, (1 << 24) // size)  # bound memory to ~16M floats per chunk
    for start in range(0, n, step):
        m = min(step, n - start)
        rows.append(np.argsort(rng.random((m, size)), axis=1)[:, :k] + low)
    return np.concatenate(rows)


def weighted_sample_distinct(rng: np.random.Generator, n: int, k: int, weights: np.ndarray) -> np.ndarray:
    """``n`` rows of ``k`` distinct indices drawn one after another with probability ~ ``weights``.

    Efraimidis-Spirakis: the top-k of ``log(u) / w`` has the same law as successive weighted
    draws without replacement (what ``numpy.random.choice(replace=False, p=...)`` does)."""
    keys = np.log(rng.random((n, weights.size))) / weights
    idx = np.argpartition(-keys, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(keys, idx, axis=1), axis=1)
    return np.take_along_axis(idx, order, axis=1)
