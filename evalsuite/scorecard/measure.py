"""What a scorecard measures for one feature map (``evalsuite.scorecard`` says how it is read).

- **capacity**: the trained argmax probe (capacity-argmax's: learned codebooks of 127 keys and 128
  values, MQAR's vocabulary, every value decoded) and the trained squared-error probe (Schlag et
  al. 2021, values of size d_v), each at (d_k, d_v) = (8, 8) and (16, 16) on three seeds; n* is the
  most pairs read back at 0.9, log-interpolated over a doubling grid. Then MQAR where the state
  binds (``settings.bind_base``: vocabulary 256, width 64, two layers of linear attention with the
  map at d_k = d_v = 16, trained on D = 2 ... 32 and read at D = 4, 8, 16): two rates on seed 0, the
  one it validates best at on seeds 1 and 2: three seeds, no ladder, so labelled not settled.
- **interference**: from those runs' own analyses (``analysis.interference``, the retrieval
  layer): how much more the stored keys overlap than as many random keys through the same map, and
  the cross-talk of a read (the other pairs' values against the right one's).
- **sharpness** (as Hedgehog and ReBased characterise maps): on Gaussian queries and keys (64 keys,
  d = 16, entries N(0, 1)), the weights a query gives the keys, phi(q).phi(k_j) / sum_i phi(q).phi(k_i),
  beside softmax's exp(q.k_j / sqrt d) / sum: their entropy, their Spearman correlation with q.k
  (monotonicity), the smallest weight times the number of keys (1: uniform; softmax's goes to 0),
  and KL(softmax || map). At the map's initialisation (a learned map such as Hedgehog's is not
  trained here).
- **cost**: the state of one head at d_k = d_v = 16 (the map's features x d_v, plus its normaliser;
  softmax: 2 d per token it keeps), and forward + backward time of the two-layer model at batch 16,
  T 128 against the same model with elu+1, timed here on the same machine.
"""
from __future__ import annotations

import math
import statistics
import time

import numpy as np
import torch

from .card import Figure

VERSION = 1  # what a stored scorecard was measured by: raise it when a measurement changes (stored cards are then remade)
SIZES = ((8, 8), (16, 16))
SEEDS = (0, 1, 2)
N_KEYS, N_VALUES = 127, 128      # MQAR's keys and values at vocabulary 256 (capacity-trained's probe)
MQAR_STATE = 16
MQAR_RATES = (0.003, 0.01)
MQAR_READ = (4, 8, 16)
SHARP_KEYS, SHARP_DIM, SHARP_QUERIES = 64, 16, 256
COST_SHAPE = (16, 128)           # batch, T (the mixture's longest sequence)


def _capacity(pairs, accuracy) -> tuple[float, str]:
    """n* and a note where it is censored by the grid."""
    from evalsuite.analysis.argmax_probe import capacity

    n = capacity(list(pairs), list(accuracy))
    if n == 0:
        return float(min(pairs)) / 2, f"below the grid (< {min(pairs)})"
    if math.isinf(n):
        return float(max(pairs)), f"above the grid (> {max(pairs)})"
    return n, ""


def probe_figures(ref, quick: bool = False, echo=None, device: str = "cpu") -> list[Figure]:
    """The argmax and squared-error probes' n* per seed at each of ``SIZES`` (trained on ``device``)."""
    from evalsuite.analysis.argmax_probe import law_capacity, pair_grid, trained_argmax_probe
    from evalsuite.analysis.capacity import schlag_probe

    seeds = SEEDS[:1] if quick else SEEDS
    out = []
    for dk, dv in SIZES:
        setting = f"d_k {dk}, d_v {dv}"
        argmax, squared, notes = {}, {}, []
        grid = pair_grid(law_capacity(dk, dv) / 3, lo=1 / 8, hi=8, most=min(N_KEYS, N_VALUES))
        sq_grid = pair_grid(dk, lo=1 / 4, hi=8, per_octave=1)
        for s in seeds:
            df = trained_argmax_probe("linear", dk, dv, grid, feature_map=ref, n_keys=N_KEYS, n_values=N_VALUES,
                                      steps=100 if quick else 1000, max_steps=200 if quick else 8000, lr=0.01, seed=s,
                                      device=device)
            last = df[df.max_steps == df.max_steps.max()].sort_values("pairs")
            argmax[s], note = _capacity(last.pairs, last.accuracy)
            if note:
                notes.append(f"argmax seed {s}: {note}")
            if not bool(last.converged.iloc[0]):
                notes.append(f"argmax seed {s}: not converged at {int(last.steps.iloc[0]):,} steps")
            sq = schlag_probe("linear", dk, sq_grid, feature_map=ref, d_value=dv, steps=100 if quick else 2000, seed=s,
                              device=device)
            squared[s], note = _capacity(sq.pairs, sq.accuracy)
            if note:
                notes.append(f"squared-error seed {s}: {note}")
            if echo:
                echo(f"  probes at {setting}, seed {s}: argmax n* {argmax[s]:.1f}, squared-error n* {squared[s]:.1f}")
        out.append(Figure(metric="argmax_capacity", setting=setting, seeds=argmax,
                          note="; ".join(n for n in notes if n.startswith("argmax"))))
        out.append(Figure(metric="squared_capacity", setting=setting, seeds=squared,
                          note="; ".join(n for n in notes if n.startswith("squared"))))
    return out


def mqar_point(ref) -> dict:
    """The MQAR configuration of a map (``None``: softmax, the positive control) on ``bind_base``."""
    from evalsuite.reproduce.settings import bind_point

    if ref is None:
        return bind_point("softmax")
    return {**bind_point("elu+1", MQAR_STATE, MQAR_STATE), "model.feature_map": ref}


def mqar_configs(ref, seeds=SEEDS, rates=MQAR_RATES, quick: bool = False) -> list:
    """The runs at ``rates`` and ``seeds`` (``RunConfig``), smoke-sized where ``quick``."""
    from evalsuite.reproduce.settings import bind_base
    from evalsuite.reproduce.smoke import smoke_config
    from evalsuite.sweep import expand
    from evalsuite.sweep_spec import SweepSpec

    spec = SweepSpec(name="scorecard", base=bind_base("cpu"), points=[{**mqar_point(ref), "train.lr": lr} for lr in rates],
                     seeds=list(seeds), base_point=False)
    return [smoke_config(p.config) if quick else p.config for p in expand(spec)]


def chosen_rate(runs) -> float | None:
    """The rate seed 0 validates best at (the first of a tie)."""
    zero = [r for r in runs if r.seed == 0 and r.status == "done"]
    if not zero:
        return None
    return max(zero, key=lambda r: (r.metrics.get("val_accuracy") or 0.0, -r.config["train"]["lr"])).config["train"]["lr"]


def mqar_figures(runs, quick: bool = False) -> list[Figure]:
    """Accuracy at each of ``MQAR_READ`` per seed at the chosen rate, its floor, and the interference
    of each seed's retrieval layer."""
    from evalsuite.reproduce.settings import BIND_PAIRS

    lr = chosen_rate(runs)
    at = {r.seed: r for r in runs if r.status == "done" and r.config["train"]["lr"] == lr}
    note = (f"lr {lr:g} of {', '.join(f'{x:g}' for x in sorted({r.config['train']['lr'] for r in runs}))} (seed 0's "
            f"validation); " + ("a smoke run of a few steps" if quick else "4 epochs, no ladder: not settled")) if lr else "no finished run"
    out = []
    for D in MQAR_READ:
        i = BIND_PAIRS.index(D)
        floor = next((r.metrics.get(f"eval_{i}_floor") for r in at.values()), None)  # the same data for every map
        out.append(Figure(metric="mqar", setting=f"D = {D}" + (f" (floor {floor:.3f})" if floor is not None else ""),
                          seeds={s: r.metrics.get(f"eval_{i}_accuracy") for s, r in sorted(at.items())}, note=note))
    excess, crosstalk = {}, {}
    for s, r in sorted(at.items()):
        row = retrieval_row(r.metrics.get("analysis") or {})
        if row:
            excess[s] = row["coherence_mean"] - row["random_coherence_mean"]
            crosstalk[s] = row.get("crosstalk_median")
    where = "the retrieval layer of the MQAR runs above"
    out.append(Figure(metric="coherence_excess", setting="trained keys", seeds=excess, note=where))
    out.append(Figure(metric="crosstalk", setting="trained reads", seeds=crosstalk, note=where))
    return out


def retrieval_row(analysis: dict) -> dict | None:
    """The interference row of the layer and head that retrieve (``analysis.sharpness.retrieval_layer``)."""
    rows = analysis.get("interference") or []
    where = analysis.get("retrieval_layer") or {}
    return next((r for r in rows if r.get("layer") == where.get("layer") and r.get("head") == where.get("head")),
                rows[-1] if rows else None)


@torch.no_grad()
def sharpness_figures(ref, seeds=SEEDS) -> list[Figure]:
    """The weights' entropy, monotonicity, smallest weight and divergence from softmax (module
    docstring), one Gaussian draw per seed (``ref`` None: softmax itself)."""
    from scipy.stats import spearmanr

    from evalsuite.models.feature_maps import get

    metrics = {k: {} for k in ("entropy", "monotonicity", "smallest_weight", "kl_softmax")}
    for s in seeds:
        gen = torch.Generator().manual_seed(s)
        q = torch.randn(SHARP_QUERIES, SHARP_DIM, generator=gen, dtype=torch.float64)
        k = torch.randn(SHARP_KEYS, SHARP_DIM, generator=gen, dtype=torch.float64)
        dots = q @ k.T                                                   # [Q, n]
        soft = torch.softmax(dots / math.sqrt(SHARP_DIM), dim=-1)
        if ref is None:
            w = soft
        else:
            torch.manual_seed(s)  # a map with random features (Performer) draws them from the seed
            fmap = get(ref, SHARP_DIM).double()
            scores = fmap.forward_query(q) @ fmap.forward_key(k).T         # [Q, n]
            w = scores.abs() / scores.abs().sum(-1, keepdim=True).clamp_min(1e-300)
        p = w.clamp_min(1e-300)
        metrics["entropy"][s] = float(-(w * p.log()).sum(-1).mean())
        rho = [spearmanr(w[i].numpy(), dots[i].numpy()).statistic for i in range(SHARP_QUERIES)]
        metrics["monotonicity"][s] = float(np.nanmean(rho))
        metrics["smallest_weight"][s] = float((w.min(-1).values * SHARP_KEYS).mean())
        metrics["kl_softmax"][s] = float((soft * (soft.log() - p.log())).sum(-1).mean())
    where = f"{SHARP_QUERIES} Gaussian queries over {SHARP_KEYS} keys, d = {SHARP_DIM}, per seed's draw"
    return [Figure(metric=m, setting="Gaussian q, k", seeds=v, note=where) for m, v in metrics.items()]


def state_floats(ref, d: int = MQAR_STATE) -> float:
    """One head's state at d_k = d_v = d: the map's features x d_v plus the normaliser's features
    (softmax: 2 d floats per token kept)."""
    from evalsuite.models.feature_maps import get

    if ref is None:
        return 2.0 * d
    m = get(ref, d).out_dim
    return float(m * d + m)


def step_seconds(ref, repeats: int = 5, device: str = "cpu") -> float:
    """Median forward + backward time of the scorecard's MQAR model at ``COST_SHAPE``."""
    from evalsuite.config import RunConfig
    from evalsuite.reproduce.settings import bind_base
    from evalsuite.sweep import expand
    from evalsuite.sweep_spec import SweepSpec

    spec = SweepSpec(base=bind_base("cpu"), points=[mqar_point(ref)], base_point=False)
    config: RunConfig = expand(spec)[0].config
    torch.manual_seed(0)
    model = config.model.build(config.task.vocab_size).to(device)
    batch, T = COST_SHAPE
    x = torch.randint(0, config.task.vocab_size, (batch, T), device=device)
    times = []
    cuda = torch.device(device).type == "cuda"
    for i in range(repeats + 2):
        begin = time.perf_counter()
        model(x).float().square().mean().backward()
        model.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize()  # timing only: the kernels queued above end here
        if i >= 2:
            times.append(time.perf_counter() - begin)
    return statistics.median(times)


def cost_figures(ref, elu1_seconds: float | None = None, seeds=SEEDS, device: str = "cpu") -> list[Figure]:
    """The state and the time ratio against elu+1 (each seed a fresh timing of both, interleaved)."""
    ratios = {}
    for s in seeds:
        mine = step_seconds(ref, device=device)
        base = step_seconds("elu1", device=device) if elu1_seconds is None else elu1_seconds
        ratios[s] = mine / base
    per = "per token kept" if ref is None else "fixed"
    return [Figure(metric="state_floats", setting="d_k = d_v = 16", seeds={0: state_floats(ref)}, note=per),
            Figure(metric="time_ratio", setting=f"batch {COST_SHAPE[0]}, T {COST_SHAPE[1]}", seeds=ratios,
                   note=f"two-layer model, forward + backward, median of 5 steps, on this machine's {device}")]
