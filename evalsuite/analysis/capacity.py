"""Memory capacity: how many (key, value) pairs a memory holds before reads go wrong.

Two probes of one memory layer, S pairs written then read back:

* analytic (``trained=False``): random unit keys and values, no learning. Shows the geometry
  alone: m linearly independent feature vectors fit in an m-dimensional linear memory.
* trained (``trained=True``), by default as Schlag et al. 2021, section 6.1 and their released
  code do it (``variant="schlag"``): S key symbols and S value symbols; a sequence writes the S
  keys once each (setting 1) with a random permutation of the values, or 2S pairs drawn with
  replacement (setting 2, the latest value of a key is the answer); values are one-hot over S
  (fixed, not learned); keys are W_k [value one-hot; learned key embedding of size 1.1 x 2S], the
  query W_q [key embedding] through its own projection; loss 0.5 ||one-hot - read||^2; Adam at
  1e-3, batch 32; evaluated every 100 steps on held-out sequences (every key of a sequence
  queried), stopped when the held-out loss reaches 0.001, after 10 evaluations without a better
  loss, or at ``steps``. Accuracy: the read's argmax is the right value. Deviation: ``steps``
  (default 4,000) caps the paper's 100,000 at CPU scale.
  ``variant="tied"`` keeps the earlier probe (``tied_probe.py``): random unit values, MSE, the
  query through the key projection.
* ``variant="schlag-ce"``: the same probe trained with cross-entropy on the read times a learned
  temperature (a scalar from 10; from 1 it sat at the squared error's level: d_key 4, S 16, 0.25
  after 6,000 steps, 0.94 from 10), the objective of a language model whose unembedding can grow.
  Not the paper's: it asks what the d' law is a law of. The squared error asks every other stored
  value to read as 0, which d' positive features allow for about d' pairs; an argmax asks only
  that a query score its own key highest. Measured (``evalsuite analyze capacity --trained
  --d-key 8 --pairs 8,16,32,64 --steps 16000``, elu+1, seed 0): ``schlag`` retrieves 6, 8, 8, 8
  pairs; ``schlag-ce`` all of them (64 of 64 in an 8 x 64 state), 125 of 128 and 180 of 256.

``knee(df)`` is the largest S still retrieved at >= 99% on held-out sequences; ``half_point(df)``
interpolates 50%.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from evalsuite.records import TARGET_ACCURACY

from .probe_common import build, check, memory_feature_dim, retrieval, row

__all__ = ["analytic_probe", "capacity_probe", "half_point", "knee", "memory_feature_dim", "probe_capacities",
           "probe_curves", "retrieved", "schlag_probe", "trained_probe"]

def analytic_probe(memory: str, d_key: int, pairs, *, feature_map=None, feature_map_options=None,
                   d_value: int | None = None, trials: int = 64, seed: int = 0) -> pd.DataFrame:
    """Write S random (key, value) pairs (keys with unit-variance entries, unit values), read
    every key back; one row per S. Accuracy: the read is nearest to its own value."""
    pairs = check(memory, d_key, pairs)
    d_value = d_value or d_key
    torch.manual_seed(seed)
    mem = build(memory, d_key, feature_map, feature_map_options)
    gen = torch.Generator().manual_seed(seed)
    rows = []
    with torch.no_grad():
        for S in pairs:
            keys = torch.randn(trials, S, d_key, generator=gen)  # unit-variance entries, like a projection's output
            if memory == "delta":
                keys = F.normalize(keys, dim=-1)  # the delta rule needs unit keys
            values = F.normalize(torch.randn(trials, S, d_value, generator=gen), dim=-1)
            read = mem(keys, values, keys)
            acc, loss = retrieval(read, values, values)
            rows.append(row(memory, feature_map, feature_map_options, d_key, S, acc, loss, False, 1,
                            mem.state_floats(S, d_value), variant="analytic", seed=seed, trials=trials))
    return pd.DataFrame(rows)


class SchlagProbe(nn.Module):
    """Schlag et al. 2021, 6.1: K = W_k [v one-hot; e_k], Q = W_q e_q, V = v one-hot, one memory."""

    def __init__(self, memory: str, d_key: int, S: int, feature_map=None, feature_map_options=None,
                 temperature: bool = False, d_value: int | None = None, seed: int = 0):
        super().__init__()
        self.memory, self.S = memory, S
        # d_value: values as fixed random unit codes of this size (the state's value side set apart from
        # S), read back by the nearest code; None: the paper's one-hot values (d_v = S)
        codes = None if d_value is None else F.normalize(
            torch.randn(S, d_value, generator=torch.Generator().manual_seed(20_000 + seed)), dim=-1)
        self.register_buffer("codebook", codes)
        # schlag-ce: a learned log temperature on the read (the logits' scale), from 10; None under squared error
        self.log_temperature = nn.Parameter(torch.tensor(math.log(10.0))) if temperature else None
        # 2S rows as in Schlag et al.'s code, where key and value symbols share one table; here only
        # the key rows [0, S) are read (values enter as one-hot vectors)
        self.embed = nn.Embedding(2 * S, int(2 * S * 1.1))
        nn.init.normal_(self.embed.weight, std=1.0)
        e = self.embed.embedding_dim
        dv = S if d_value is None else d_value
        self.key_proj = nn.Linear(e + dv, d_key)
        self.query_proj = nn.Linear(e, d_key)
        bound = 1 / math.sqrt(d_key)
        for lin in (self.key_proj, self.query_proj):
            nn.init.uniform_(lin.weight, -bound, bound)
        self.beta = nn.Linear(e + dv, 1) if memory == "delta" else None
        self.mem = build(memory, d_key, feature_map, feature_map_options)

    def value(self, value_ids):
        """The value vectors ``[..., d_v]`` of ``value_ids`` (one-hot of size S, or their codes)."""
        return F.one_hot(value_ids, self.S).float() if self.codebook is None else self.codebook[value_ids]

    def scores(self, read):
        """Each candidate value's score ``[..., S]`` for a read ``[..., d_v]`` (with one-hot values, the
        read itself)."""
        return read if self.codebook is None else read @ self.codebook.T

    def forward(self, key_ids, value_ids, query_ids):
        v = self.value(value_ids)                                      # [N, L, d_v]
        x = torch.cat([v, self.embed(key_ids)], -1)
        k, q = self.key_proj(x), self.query_proj(self.embed(query_ids))
        beta = None
        if self.memory == "delta":  # unit keys keep the triangular solve bounded
            k, q = F.normalize(k, dim=-1), F.normalize(q, dim=-1)
            beta = torch.sigmoid(self.beta(x)).squeeze(-1)
        scale = 1 / math.sqrt(k.shape[-1]) if self.memory == "softmax" else None
        return self.mem(k, v, q, beta=beta, scale=scale)


def _schlag_batch(n, S, setting, gen, device, all_queries=False):
    """``(key_ids, value_ids + S, query_ids, answer_ids, present)``: setting 1 writes the S keys once
    each with a permutation of the S values; setting 2 writes 2S pairs drawn with replacement. One
    query per sequence (``all_queries``: every key id, ``present`` marking those the sequence wrote,
    for evaluation). Value ids are offset by S (the second half of the symbol table)."""
    if setting == 1:
        key_ids = torch.argsort(torch.rand(n, S, generator=gen), dim=1)
        value_ids = torch.argsort(torch.rand(n, S, generator=gen), dim=1)
    else:
        key_ids = torch.randint(0, S, (n, 2 * S), generator=gen)
        value_ids = torch.randint(0, S, (n, 2 * S), generator=gen)
    L = key_ids.shape[1]
    if all_queries:
        query_ids = torch.arange(S).expand(n, S)
        present = (key_ids[:, :, None] == query_ids[:, None, :]).any(1)        # [n, S]
    else:
        query_ids = key_ids.gather(1, torch.randint(0, L, (n, 1), generator=gen))
        present = torch.ones_like(query_ids, dtype=torch.bool)
    positions = torch.arange(L)[None, :, None]
    latest = torch.where(key_ids[:, :, None] == query_ids[:, None, :], positions, -1).amax(1)   # [n, R]
    answer = value_ids.gather(1, latest.clamp_min(0))
    return (key_ids.to(device), value_ids.to(device) + S, query_ids.to(device), answer.to(device), present.to(device))


def _schlag_loss(probe, read, answer, S):
    """Per-query loss: the paper's 0.5 ||value - read||^2 (the value one-hot, or its code), or
    (schlag-ce) cross-entropy on the candidates' scores times the probe's learned temperature."""
    if probe.log_temperature is None:
        return 0.5 * (probe.value(answer) - read).square().sum(-1)
    logits = probe.scores(read) * probe.log_temperature.exp()
    return F.cross_entropy(logits.flatten(0, -2), answer.flatten(), reduction="none").view(answer.shape)


def schlag_probe(memory: str, d_key: int, pairs, *, feature_map=None, feature_map_options=None, setting: int = 1,
                 steps: int = 4000, batch_size: int = 32, lr: float = 1e-3, test_sequences: int = 20, seed: int = 0,
                 device: str = "cpu", echo=None, min_steps: int = 0, loss: str = "squared",
                 d_value: int | None = None) -> pd.DataFrame:
    """The trained probe as in Schlag et al. 2021, 6.1 (module docstring); one row per S.
    ``min_steps``: no stop on patience before this step (a probe rerun at 4x the steps must get
    them; reaching the loss target still stops it). ``loss``: ``"squared"`` (the paper's) or
    ``"cross_entropy"`` (variant schlag-ce). ``d_value``: the state's value side, values as fixed
    random unit codes of that size read back by the nearest one (default: the paper's one-hot
    values, d_v = S)."""
    pairs = check(memory, d_key, pairs)
    if d_value is not None and not (isinstance(d_value, int) and d_value >= 1):
        raise ValueError(f"d_value must be a positive integer, got {d_value!r}")
    if loss not in ("squared", "cross_entropy"):
        raise ValueError(f"loss must be squared or cross_entropy, got {loss!r}")
    variant = "schlag" if loss == "squared" else "schlag-ce"
    dev = torch.device(device)
    rows = []
    for S in pairs:
        start = time.perf_counter()
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        probe = SchlagProbe(memory, d_key, S, feature_map, feature_map_options,
                            temperature=loss == "cross_entropy", d_value=d_value, seed=seed).to(dev)
        opt = torch.optim.Adam(probe.parameters(), lr=lr)
        held_out = _schlag_batch(test_sequences, S, setting, torch.Generator().manual_seed(10_000 + seed), dev,
                                 all_queries=True)
        best, strikes, step = (math.inf, 0.0), 0, 0
        for step in range(1, steps + 1):
            key_ids, value_ids, query_ids, answer, _ = _schlag_batch(batch_size, S, setting, gen, dev)
            read = probe(key_ids, value_ids - S, query_ids)
            objective = _schlag_loss(probe, read, answer, S).mean()
            opt.zero_grad(set_to_none=True)
            objective.backward()
            opt.step()
            if step % 100 == 0 or step == steps:
                val_loss, val_acc = _evaluate_schlag(probe, held_out, S)
                if val_loss < best[0]:
                    best, strikes = (val_loss, val_acc), 0
                else:
                    strikes += 1
                if val_loss <= 0.001 or (strikes > 10 and step >= min_steps):
                    break
        loss_value, acc = best
        rows.append(row(memory, feature_map, feature_map_options, d_key, S, acc, loss_value, True, setting,
                        probe.mem.state_floats(S, d_value or S), variant=variant, seed=seed, steps=step, max_steps=steps,
                        lr=lr, batch_size=batch_size, seconds=time.perf_counter() - start,
                        **({} if d_value is None else {"d_value": d_value})))
        if echo:
            echo(f"  {rows[-1]['memory']:>20}  S={S:>4}  held-out accuracy {acc:.3f}  loss {loss_value:.4f}  "
                 f"({step} steps, {rows[-1]['seconds']:.1f} s)")
    return pd.DataFrame(rows)


@torch.no_grad()
def _evaluate_schlag(probe, batch, S):
    """Held-out loss (as in training) and accuracy (argmax of the read is the right value) over every
    key present in each held-out sequence."""
    key_ids, value_ids, query_ids, answer, present = batch
    read = probe(key_ids, value_ids - S, query_ids)                           # [n, S queries, S values]
    err = _schlag_loss(probe, read, answer, S)
    hit = probe.scores(read).argmax(-1) == answer
    return float(err[present].mean()), float(hit[present].float().mean())


VARIANTS = ("schlag", "schlag-ce", "tied")


def trained_probe(memory: str, d_key: int, pairs, *, variant: str = "schlag", feature_map=None, feature_map_options=None,
                  setting: int = 1, steps: int = 4000, seed: int = 0, device: str = "cpu", echo=None,
                  **options) -> pd.DataFrame:
    """A fresh probe per S: ``variant="schlag"`` (default, the paper's protocol), ``"schlag-ce"``
    (the same under cross-entropy) or ``"tied"``."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    if setting not in (1, 2):
        raise ValueError(f"setting must be 1 (each key written once) or 2 (keys recur), got {setting!r}")
    if variant == "schlag-ce":
        options = {**options, "loss": "cross_entropy"}
    if variant == "tied":
        from .tied_probe import tied_probe as probe
    else:
        probe = schlag_probe
    return probe(memory, d_key, pairs, feature_map=feature_map, feature_map_options=feature_map_options, setting=setting,
                 steps=steps, seed=seed, device=device, echo=echo, **options)


PAIRS = (4, 8, 12, 16, 24, 32, 48, 64)


def capacity_probe(memory: str = "linear", feature_map=None, d_key: int = 16, pairs=PAIRS, *,
                   trained: bool = False, seed: int = 0, **options) -> pd.DataFrame:
    """One row per S with ``accuracy`` and ``loss`` (and ``state_floats``); see the module doc."""
    probe = trained_probe if trained else analytic_probe
    return probe(memory, d_key, pairs, feature_map=feature_map, seed=seed, **options)


def probe_feature_dim(memory: str, d_key: int) -> int | None:
    """d': the feature dimension a probe's memory holds pairs in, read from its label, for rows
    stored before they carried ``feature_dim`` (elu+1, DPFP: 2 nu d_key; the delta rule: d_key);
    None for softmax, which keeps every pair. Rows that carry it: ``probe_capacities``."""
    if memory.startswith("linear/dpfp(nu="):
        return 2 * int(memory.split("nu=")[1].rstrip(")")) * d_key
    return d_key if memory.startswith("linear/") or memory == "delta" else None


def probe_curves(probes: pd.DataFrame, d_key: int, d_value: int | None = None) -> dict[str, pd.DataFrame]:
    """Per memory, one row per S from the longest step budget probed: accuracy averaged over the
    seeds at that budget, ``seeds``, ``ran_out`` (some seed used every step: it may still have
    been learning) and ``base_steps`` (the memory's first budget). Only trained, setting-1 probes
    of the paper's variant at ``d_key`` and ``d_value`` (None: the paper's one-hot values): other
    sides or variants are never pooled in."""
    if probes is None or probes.empty or "d_key" not in probes:
        return {}
    rows = probes[(probes.trained == True) & (probes.setting == 1) & (probes.d_key == d_key)]  # noqa: E712
    if "variant" in rows:
        rows = rows[rows.variant.fillna("schlag") == "schlag"]
    if "d_value" in rows:
        rows = rows[rows.d_value.isna()] if d_value is None else rows[rows.d_value == d_value]
    elif d_value is not None:
        rows = rows.iloc[:0]
    if rows.empty:
        return {}
    rows = rows.assign(max_steps=rows.get("max_steps", pd.Series(0, index=rows.index)).fillna(0),
                       steps=rows.get("steps", pd.Series(0, index=rows.index)).fillna(0),
                       seed=rows.get("seed", pd.Series(0, index=rows.index)).fillna(0))
    rows = rows.assign(ran_out=rows.steps >= rows.max_steps, base_steps=rows.groupby("memory").max_steps.transform("min"))
    grouped = rows.groupby(["memory", "pairs", "max_steps"]).agg(
        accuracy=("accuracy", "mean"), seeds=("seed", "nunique"), ran_out=("ran_out", "any"),
        base_steps=("base_steps", "first")).reset_index()
    grouped = grouped.sort_values("max_steps").drop_duplicates(["memory", "pairs"], keep="last")
    return {m: df.sort_values("pairs") for m, df in grouped.groupby("memory")}


def probe_capacities(probes: pd.DataFrame | None) -> dict[tuple[str, int], float]:
    """(memory, d') -> pairs retrieved past d' in the trained probe (``retrieved`` of the curve
    ``probe_curves`` reads at each d_key: the longest step budget, mean over its seeds), for
    every memory with a d' whose grid reaches past it. d' is the row's ``feature_dim`` where
    stored, else ``probe_feature_dim`` of its label."""
    if probes is None or probes.empty or "d_key" not in probes:
        return {}
    out = {}
    for d_key in sorted({int(k) for k in probes.d_key.dropna()}):
        rows = probes[probes.d_key == d_key]
        for memory, curve in probe_curves(probes, d_key).items():
            stored = rows[rows.memory == memory].get("feature_dim", pd.Series(dtype=float)).dropna()
            d = int(stored.iloc[0]) if len(stored) else probe_feature_dim(memory, d_key)
            if d is not None and (got := retrieved(curve, d)) is not None:
                out[memory, d] = got
    return out


def retrieved(curve: pd.DataFrame, d: int) -> float | None:
    """Pairs retrieved past the feature dimension: the most of accuracy x S over the S points above
    ``d`` (None when the grid does not reach past it)."""
    beyond = curve[curve.pairs > d]
    return None if beyond.empty else float((beyond.accuracy * beyond.pairs).max())


def knee(df: pd.DataFrame, threshold: float = TARGET_ACCURACY, x: str = "pairs", y: str = "accuracy") -> int:
    """Largest ``x`` such that every ``x`` up to it is retrieved at >= ``threshold`` (0 if none)."""
    best = 0
    for _, point in df.sort_values(x).iterrows():
        if point[y] < threshold:
            break
        best = int(point[x])
    return best


def half_point(df: pd.DataFrame, level: float = 0.5, x: str = "pairs", y: str = "accuracy") -> float:
    """``x`` where accuracy first falls through ``level``, interpolated on a log scale;
    ``inf`` if it never does, the first ``x`` if it starts below."""
    pts = df.sort_values(x)[[x, y]].to_numpy(dtype=float)
    if len(pts) == 0:
        return math.nan
    if pts[0, 1] < level:
        return float(pts[0, 0])
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if y0 >= level > y1:
            frac = (y0 - level) / (y0 - y1)
            return float(np.exp(np.log(x0) + frac * (np.log(x1) - np.log(x0))))
    return math.inf
