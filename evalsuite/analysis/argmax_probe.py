"""How many pairs a fixed d_k x d_v state retrieves by top-1 (argmax) reading: the argmax capacity.

One success criterion throughout: a memory **retrieves n pairs** when at least ``SUCCESS`` (0.9)
of the n stored pairs are read back right (the per-pair accuracy over held-out sequences, every
stored key queried once); its **capacity n*** is the most pairs it retrieves so, interpolated on
log n between the probed n on either side of 0.9 (``capacity``). The fraction of sequences with
every pair right is recorded beside it (``every_pair``).

Two probes of one memory layer (a mixer's own, ``models.probe_memory``):

* **calibration** (``calibration``, no training): the setting of Barnfield, Kim, Nichani, Lee and
  Lu 2026 ("Sharp capacity thresholds in linear associative memory"): the signed
  correlation-matrix memory M = sum_i y_i x_i^T (our linear memory with the identity map and no
  denominator) with isotropic Gaussian keys x_i in R^d_k and targets y_i in R^d_v; the query x_j
  retrieves argmax_i <y_i, M x_j> among the n targets. Their theorem puts top-1 retrieval at
  d_k d_v on the order of n log n (conjectured sharp: d^2 ~ 2 n ln n at d_k = d_v = d), so it
  checks our code against the paper.
* **trained** (``trained_argmax_probe``, the finding): learned codebooks of MQAR's sizes, a key
  codeword in R^d_k per key token and a value codeword in R^d_v per value token; a sequence writes
  n pairs (distinct keys, values drawn without replacement) into the memory, then queries each of
  its keys with the key's own codeword (what a trained query projection can at best produce) and
  decodes the read over **every** value token: logits = temperature x read . C_v^T, trained with
  cross-entropy (a language model's objective). One probe trains on a mixture of n (each step one
  n, drawn from the grid) and is read at each n, as mixed-D training reads a model at each D.
  (Squared-error retrieval, the law n* ~ d_k, is Schlag et al.'s probe, ``capacity.schlag_probe``.)
  It is **converged** at a budget when twice the steps moves its capacity by less than
  ``CONVERGED`` (5%) and its mean accuracy over the grid by less than ``STILL`` (0.01: a capacity
  of 0 at both budgets with every accuracy still rising is not converged); ``trained_argmax_probe``
  doubles the steps until then or until ``max_steps``, and says which.

The law under test (issue 61): n* ~ d_k d_v / (2 ln n*) where min(d_k, d_v) >= about 2 ln n*; the
squared-error law n* ~ d_k. ``law_capacity`` solves the first for n*.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from .probe_common import build, check

DEADLINE_EVERY = 50  # steps between looks at a segment's deadline


class Stopped(RuntimeError):
    """A probe stopped at its segment's deadline (its rows are not stored; it runs again)."""


SUCCESS = 0.9      # a memory retrieves n pairs when at least this fraction of them is read back right
CONVERGED = 0.05   # doubling the steps moves the capacity by less than this (relative): converged
STILL = 0.01       # ... and the mean accuracy over the grid by less than this


def law_capacity(d_key: int, d_value: int) -> float:
    """n* solving n ln n = d_k d_v / 2 (the law n* ~ d_k d_v / (2 ln n*)); at least 1."""
    target = d_key * d_value / 2
    lo, hi = 1.0, max(2.0, target)
    for _ in range(100):  # n ln n is increasing for n >= 1
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mid * math.log(mid) < target else (lo, mid)
    return max(1.0, lo)


def capacity(pairs, accuracy, level: float = SUCCESS) -> float:
    """n*: the most pairs retrieved at >= ``level``, log-interpolated between the last n at or above
    it and the first below (0 when the smallest n is already below; the largest n with a note-free
    lower bound when none falls below: then it is ``inf``)."""
    pts = sorted(zip(pairs, accuracy))
    if not pts or pts[0][1] < level:
        return 0.0
    for (n0, a0), (n1, a1) in zip(pts, pts[1:]):
        if a0 >= level > a1:
            frac = (a0 - level) / (a0 - a1)
            return float(math.exp(math.log(n0) + frac * (math.log(n1) - math.log(n0))))
    return math.inf


def pair_grid(center: float, lo: float = 0.25, hi: float = 4.0, per_octave: int = 2, most: int | None = None) -> list[int]:
    """Pair counts from ``lo`` to ``hi`` times ``center``, ``per_octave`` a doubling (at least 1; at
    most ``most``)."""
    steps = int(round(math.log2(hi / lo) * per_octave))
    out = sorted({max(1, round(center * lo * 2 ** (i / per_octave))) for i in range(steps + 1)})
    return [n for n in out if most is None or n <= most]


# --- calibration: the theorem's memory on random vectors -------------------------------------------
@torch.no_grad()
def calibration(d_key: int, d_value: int, pairs, *, trials: int | None = None, seed: int = 0,
                device="cpu") -> pd.DataFrame:
    """Top-1 retrieval of n random Gaussian pairs from M = sum y x^T (module docstring), one row per n:
    ``accuracy`` (the fraction of pairs right), ``every_pair`` (of trials with all right)."""
    pairs = check("linear", d_key, pairs)
    mem = build("linear", d_key, feature_map="identity", normalize="none")
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for n in pairs:
        t = trials or max(8, math.ceil(4000 / n))  # about 4,000 queries a point
        x = torch.randn(t, n, d_key, generator=gen).to(device)   # drawn on the CPU: the same pairs on every device
        y = torch.randn(t, n, d_value, generator=gen).to(device)
        read = mem(x, y, x)                                                   # [t, n, dv] = M x_j
        hit = (read @ y.transpose(-1, -2)).argmax(-1) == torch.arange(n, device=x.device)  # argmax over the n targets
        rows.append({"probe": "argmax", "variant": "calibration", "memory": "linear/identity (no denominator)",
                     "kind": "linear", "objective": "none", "d_key": d_key, "d_value": d_value, "pairs": n,
                     "accuracy": float(hit.float().mean()), "every_pair": float(hit.all(-1).float().mean()),
                     "trials": t, "seed": seed, "trained": False, "setting": 1, "state_floats": d_key * d_value})
    return pd.DataFrame(rows)


def calibration_capacity(d_key: int, d_value: int, *, seed: int = 0, level: float = SUCCESS,
                         device="cpu") -> tuple[float, pd.DataFrame]:
    """n* of the calibration memory, found by doubling n past the level and then bisecting."""
    n, seen = 1, {}
    while True:
        seen.update(_rows(calibration(d_key, d_value, [n], seed=seed, device=device)))
        if seen[n] < level or n > 1e6:
            break
        n *= 2
    lo, hi = max(1, n // 2), n
    while hi - lo > max(1, lo // 50):  # to within 2%
        mid = (lo + hi) // 2
        seen.update(_rows(calibration(d_key, d_value, [mid], seed=seed, device=device)))
        lo, hi = (mid, hi) if seen[mid] >= level else (lo, mid)
    df = calibration(d_key, d_value, sorted(seen), seed=seed, device=device)
    return capacity(df.pairs, df.accuracy, level), df


def _rows(df: pd.DataFrame) -> dict[int, float]:
    return dict(zip(df.pairs.astype(int), df.accuracy))


# --- the trained probe: learned codebooks ----------------------------------------------------------
class CodebookProbe(nn.Module):
    """Key and value codebooks (``n_keys`` x d_k, ``n_values`` x d_v, learned) around one memory."""

    def __init__(self, memory: str, d_key: int, d_value: int, n_keys: int, n_values: int, feature_map=None,
                 feature_map_options=None, memory_options: dict | None = None):
        super().__init__()
        self.memory = memory
        self.keys = nn.Embedding(n_keys, d_key)
        self.values = nn.Embedding(n_values, d_value)
        nn.init.normal_(self.keys.weight, std=1.0)
        nn.init.normal_(self.values.weight, std=1.0)
        self.beta = nn.Embedding(n_keys, 1) if memory == "delta" else None  # a write strength per key token
        if self.beta is not None:
            nn.init.zeros_(self.beta.weight)                                  # sigmoid(0) = 0.5
        self.log_temperature = nn.Parameter(torch.tensor(math.log(4.0)))  # the scores' scale, as an unembedding's
        self.mem = build(memory, d_key, feature_map, feature_map_options, **(memory_options or {}))

    def forward(self, key_ids, value_ids):
        """Scores ``[N, n, n_values]`` of every value token for each stored key of ``key_ids [N, n]``."""
        k, v = self.keys(key_ids), self.values(value_ids)                    # [N, n, dk], [N, n, dv]
        beta = None
        if self.memory == "delta":                                            # unit keys keep the solve bounded
            k = F.normalize(k, dim=-1)
            beta = torch.sigmoid(self.beta(key_ids)).squeeze(-1)
        read = self.mem(k, v, k, beta=beta)                                   # [N, n, dv]
        return read @ self.values.weight.T * self.log_temperature.exp()      # [N, n, V]: decode over every value


def _batch(n_seq: int, n: int, n_keys: int, n_values: int, gen: torch.Generator):
    """``n_seq`` sequences of ``n`` pairs: distinct keys, values without replacement."""
    keys = torch.rand(n_seq, n_keys, generator=gen).argsort(-1)[:, :n]
    values = torch.rand(n_seq, n_values, generator=gen).argsort(-1)[:, :n]
    return keys, values


@torch.no_grad()
def _evaluate(probe: CodebookProbe, sets: dict[int, tuple]) -> dict[int, tuple[float, float]]:
    """n -> (accuracy, every_pair) on the held-out sequences of each n."""
    out = {}
    for n, (keys, values) in sets.items():
        hit = probe(keys, values).argmax(-1) == values
        out[n] = (float(hit.float().mean()), float(hit.all(-1).float().mean()))
    return out


def trained_argmax_probe(memory: str, d_key: int, d_value: int, pairs, *, feature_map=None, feature_map_options=None,
                         memory_options: dict | None = None, n_keys: int = 512, n_values: int = 512,
                         steps: int = 2000, max_steps: int = 32000, lr: float = 3e-3, batch_size: int = 64,
                         test_sequences: int = 256, seed: int = 0, echo=None,
                         deadline: float | None = None, device="cpu") -> pd.DataFrame:
    """Train one probe on a mixture of the pair counts ``pairs`` and read it at each (module
    docstring); evaluated at ``steps``, then each doubling up to ``max_steps``, stopping once twice
    the steps moves the capacity by less than ``CONVERGED``. One row per n and evaluated budget, with
    ``capacity`` (of that budget) and ``converged`` (of the last budget: True, or False where
    ``max_steps`` ran out first). ``deadline``: a wall-clock time (``time.time()``) at which it stops
    (``Stopped``, checked every ``DEADLINE_EVERY`` steps): a segment that ends stops its probes.
    ``device``: where it trains (batches are drawn on the CPU, so every device sees the same ones;
    a non-finite loss is looked for once per evaluation, not per step)."""
    pairs = check(memory, d_key, pairs)
    if not isinstance(d_value, int) or d_value < 1:
        raise ValueError(f"d_value must be a positive integer, got {d_value!r}")
    if max(pairs) > min(n_keys, n_values):
        raise ValueError(f"pairs: at most min(n_keys, n_values) = {min(n_keys, n_values)} distinct pairs, "
                         f"got {max(pairs)}")
    if steps < 1 or max_steps < steps:
        raise ValueError(f"steps must be at least 1 and at most max_steps ({max_steps}), got {steps}")
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    device = torch.device(device)
    probe = CodebookProbe(memory, d_key, d_value, n_keys, n_values, feature_map, feature_map_options,
                          memory_options).to(device)
    mem = probe.mem
    opt = torch.optim.Adam(probe.parameters(), lr=lr)
    held = torch.Generator().manual_seed(10_000 + seed)
    sets = {n: tuple(t.to(device) for t in _batch(max(1, test_sequences * 16 // max(16, n)), n, n_keys, n_values, held))
            for n in pairs}
    bad = torch.zeros((), dtype=torch.bool, device=device)  # a non-finite loss since the last evaluation
    rows, budget, step, previous, start = [], steps, 0, None, time.perf_counter()
    label = memory_name(memory, feature_map, memory_options)
    d_prime = mem.key_features()
    while True:
        while step < budget:
            step += 1
            if deadline is not None and step % DEADLINE_EVERY == 0 and time.time() >= deadline:
                raise Stopped(f"the segment ended at step {step:,} of {budget:,}")
            n = pairs[int(torch.randint(len(pairs), (1,), generator=gen))]
            keys, values = (t.to(device, non_blocking=True) for t in _batch(batch_size, n, n_keys, n_values, gen))
            loss = F.cross_entropy(probe(keys, values).flatten(0, 1), values.flatten())
            bad |= ~torch.isfinite(loss)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        if bool(bad):  # the one host sync of a budget
            raise FloatingPointError(f"the probe's loss became non-finite before step {step:,} (lr {lr})")
        scores = _evaluate(probe, sets)
        cap = capacity(list(scores), [a for a, _ in scores.values()])
        mean = sum(a for a, _ in scores.values()) / len(scores)
        converged = previous is not None and _close(previous[0], cap) and abs(mean - previous[1]) < STILL
        for n, (acc, every) in scores.items():
            rows.append({"probe": "argmax", "variant": "trained", "memory": label, "kind": memory,
                         "feature_map": feature_map, "objective": "cross_entropy", "d_key": d_key, "d_value": d_value,
                         "feature_dim": d_prime, "pairs": n, "accuracy": acc, "every_pair": every, "steps": step,
                         "max_steps": budget, "capacity": cap, "lr": lr, "batch_size": batch_size, "seed": seed,
                         "n_keys": n_keys, "n_values": n_values, "trained": True, "setting": 1,
                         "state_floats": mem.state_floats(n, d_value), **(memory_options or {}),
                         "seconds": time.perf_counter() - start})
        if echo:
            echo(f"  {label} d_k {d_key} d_v {d_value} seed {seed}: capacity {cap:.1f} at {step:,} steps "
                 f"({time.perf_counter() - start:.0f} s)" + (" converged" if converged else ""))
        if converged or budget * 2 > max_steps:
            for r in rows:
                if r["max_steps"] == budget:
                    r["converged"] = bool(converged)
            return pd.DataFrame(rows)
        previous, budget = (cap, mean), budget * 2


def memory_name(memory: str, feature_map=None, memory_options: dict | None = None) -> str:
    """A probe memory's label: ``linear/elu1``, ``linear/identity (no denominator)``, ``delta``."""
    name = memory + (f"/{feature_map or 'elu1'}" if memory == "linear" else "")
    return name + (" (no denominator)" if (memory_options or {}).get("normalize") == "none" else "")


def _close(a: float, b: float) -> bool:
    """Two capacities within ``CONVERGED`` of each other (both infinite or both zero: equal)."""
    if math.isinf(a) or math.isinf(b) or a == 0 or b == 0:
        return a == b
    return abs(b - a) / a < CONVERGED


def slope(d, n) -> float:
    """The least-squares slope of log n against log d."""
    x, y = np.log(np.asarray(d, float)), np.log(np.asarray(n, float))
    return float(np.polyfit(x, y, 1)[0])
