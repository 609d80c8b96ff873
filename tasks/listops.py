"""ListOps (Long Range Arena, arXiv 2011.04006), graded causally at the final position.

Trees follow the LRA generator: from depth 1, a node below ``max_depth`` is a leaf digit with
probability 0.75, else an operator (MIN, MAX, MED, SM = sum mod 10, uniformly) with
randint(2, max_args) children; at ``max_depth`` it is a leaf. A leaf is 1 token, an operator 2
plus its children. Only trees with min_length < length < max_length (strict) are kept, and
duplicates are removed. MED is int(numpy.median(args)).

Sequence: the expression's tokens, then ``=``, padded with 0; the target at ``=`` is the value.
Trees are built per example in Python, so generated sets are cached on disk, keyed by a hash of
the parameters, the seed and the size, in the ``cache_dir`` the caller gives (the pipeline: a
``cache/`` folder beside the results store) or ``$EVALSUITE_CACHE``; without either nothing is
cached. Each file carries a SHA-256 of its arrays and is verified on read: a file that was
edited, truncated or cannot be read is regenerated, with a warning.
"""
from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path

import numpy as np
import torch
from pydantic import Field

from evalsuite import files

from . import TASKS
from .base import IGNORE, Batch, Task, TaskParams

OPERATORS = ("[MIN", "[MAX", "[MED", "[SM")
TOKENS = ["_"] + [str(d) for d in range(10)] + list(OPERATORS) + ["]", "="]
TOKEN_ID = {t: i for i, t in enumerate(TOKENS)}
LEAF_P = 0.75


def apply_op(op: str, args: list[int]) -> int:
    if op == "[MIN":
        return min(args)
    if op == "[MAX":
        return max(args)
    if op == "[MED":
        return int(np.median(args))
    return sum(args) % 10


def _tree(rng: np.random.Generator, depth: int, max_depth: int, max_args: int, out: list[str]) -> int:
    """Append one random tree's tokens to ``out``; return its value."""
    if depth >= max_depth or rng.random() < LEAF_P:
        value = int(rng.integers(10))
        out.append(str(value))
        return value
    num_args = int(rng.integers(2, max_args + 1))
    op_index = len(out)
    out.append("")  # the operator is drawn after its children, as in LRA
    args = [_tree(rng, depth + 1, max_depth, max_args, out) for _ in range(num_args)]
    op = OPERATORS[int(rng.integers(len(OPERATORS)))]
    out[op_index] = op
    out.append("]")
    return apply_op(op, args)


class ListOpsParams(TaskParams):
    max_depth: int = Field(10, ge=1, description="deepest operator nesting")
    max_args: int = Field(10, ge=2, description="most arguments per operator")
    min_length: int = Field(500, ge=0, description="keep trees strictly longer than this many tokens")
    max_length: int = Field(2000, ge=2, description="keep trees strictly shorter than this; also the padded length")
    max_tries: int = Field(5_000_000, ge=1, description="trees drawn at most before giving up")


@TASKS.register()  # under its `name`
class ListOps(Task):
    """Evaluate a nested MIN/MAX/MED/SM expression over digits (LRA)."""

    name = "listops"
    description = "ListOps from Long Range Arena; answer graded at the final position"
    Params = ListOpsParams
    presets = {
        "default": dict(max_depth=4, max_args=4, min_length=10, max_length=64),
        "tiny": dict(max_depth=3, max_args=3, min_length=4, max_length=24),
        "lra": dict(max_depth=10, max_args=10, min_length=500, max_length=2000),
    }
    preset_bases = {"lra": "default"}  # LRA's model differs; the default model and train settings
    slice_keys = ("length_bin",)
    chance_rule = "majority class: always answer the most common test label"

    @property
    def vocab_size(self):
        return len(TOKENS)

    @property
    def seq_len(self):
        return self.params.max_length

    def check(self):
        p = self.params
        if p.min_length + 1 >= p.max_length:
            raise ValueError(f"listops needs min_length + 1 < max_length (the window is strict), got "
                             f"min_length={p.min_length}, max_length={p.max_length}")
        longest = _max_tree_length(p.max_depth, p.max_args)
        if longest <= p.min_length:
            raise ValueError(f"listops with max_depth={p.max_depth}, max_args={p.max_args} makes trees of at most "
                             f"{longest} tokens, never longer than min_length={p.min_length}")

    def token_names(self):
        return list(TOKENS)

    def generate(self, n: int, seed: int, cache_dir: str | os.PathLike | None | bool = None) -> Batch:
        """``cache_dir``: a folder, None for ``$EVALSUITE_CACHE`` (no cache when unset), False for none."""
        if cache_dir is None:
            cache_dir = os.environ.get("EVALSUITE_CACHE")
        if not cache_dir:
            return super().generate(n, seed)
        cache = self.cache_path(Path(cache_dir), n, seed)
        if cache.exists():
            data = _read_verified(cache)
            if data is not None:
                return self._batch(data["inputs"], data["targets"], data["lengths"])
            warnings.warn(f"listops cache {cache} is corrupt or was modified (its SHA-256 does not match); "
                          f"regenerating it", stacklevel=2)
        batch = super().generate(n, seed)
        arrays = {"inputs": batch.inputs.numpy(), "targets": batch.targets.numpy(), "lengths": batch.meta["length"].numpy()}
        try:
            files.atomic_write(cache, lambda f: np.savez_compressed(f, digest=_digest(arrays), **arrays))
        except OSError as exc:  # a cache is an optimisation: say so, and go on without it
            warnings.warn(f"listops cache not written ({exc})", stacklevel=2)
        return batch

    def cache_path(self, root: Path, n: int, seed: int) -> Path:
        key = json.dumps({"params": self.params.model_dump(), "n": n, "seed": seed, "v": 1}, sort_keys=True)
        return root / "listops" / (hashlib.sha256(key.encode()).hexdigest()[:20] + ".npz")

    def _generate(self, n, rng):
        p = self.params
        seen: set[tuple[str, ...]] = set()
        rows: list[list[str]] = []
        values: list[int] = []
        tries = 0
        while len(rows) < n:
            tries += 1
            if tries > p.max_tries:
                raise RuntimeError(f"listops kept only {len(rows)} of {n} trees after {p.max_tries} draws; "
                                   f"widen the length window or raise max_tries")
            out: list[str] = []
            value = _tree(rng, 1, p.max_depth, p.max_args, out)
            if p.min_length < len(out) < p.max_length and tuple(out) not in seen:
                seen.add(tuple(out))
                rows.append(out)
                values.append(value)
        T = p.max_length
        inputs = np.zeros((n, T), dtype=np.int64)
        targets = np.full((n, T), IGNORE, dtype=np.int64)
        lengths = np.array([len(r) for r in rows])
        for i, (row, value) in enumerate(zip(rows, values)):
            inputs[i, :len(row)] = [TOKEN_ID[t] for t in row]
            inputs[i, len(row)] = TOKEN_ID["="]
            targets[i, len(row)] = TOKEN_ID[str(value)]
        return self._batch(inputs, targets, lengths)

    def _batch(self, inputs, targets, lengths) -> Batch:
        lengths = torch.as_tensor(lengths)
        bins = torch.clamp(lengths * 4 // self.params.max_length, max=3)  # length quartile of the window
        return Batch(torch.as_tensor(inputs), torch.as_tensor(targets), {"length": lengths, "length_bin": bins})


def _digest(arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name in ("inputs", "targets", "lengths"):
        a = np.ascontiguousarray(arrays[name], dtype=np.int64)
        h.update(name.encode() + str(a.shape).encode() + a.tobytes())
    return h.hexdigest()


def _read_verified(path: Path) -> dict[str, np.ndarray] | None:
    """The cached arrays when the file reads and its digest matches them; else None."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in ("inputs", "targets", "lengths")}
            digest = str(data["digest"])
    except Exception:  # noqa: BLE001 - truncated, not an npz, a missing key: regenerate
        return None
    return arrays if digest == _digest(arrays) else None


def _max_tree_length(max_depth: int, max_args: int) -> int:
    length = 1
    for _ in range(max_depth - 1):
        length = 2 + max_args * length
    return length
